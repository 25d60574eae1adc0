/**
 * Docs that run as written: every ```ts block in README.md and docs/*.md is type-checked as a
 * module of its own, the way an app would compile it (strict, NodeNext, "leasehold" and its entry
 * points mapped to src/), so a snippet cannot rot while the API moves. How blocks are found and
 * checked, and the `<!-- prelude: … -->` comment: test/support/docSnippets.ts.
 *
 * A fixture page with one broken block is checked in the same program, so the test also shows
 * that a broken snippet is caught and located by file and line. The pages' examples that claim
 * to be test files are compared with those files, and every file the pages cite must exist.
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { beforeAll, describe, expect, it } from "vitest"
import {
  type Block,
  checkBlocks,
  type CheckResult,
  anchorProblems,
  docFiles,
  documentationBlocks,
  ENTRY_POINTS,
  extractBlocks,
  formatProblem,
  isTypeScript,
  missingCitations,
  ROOT,
  unindexedPages,
  untaggedBlocks,
  withoutWhitespace
} from "../support/docSnippets.ts"

/** A page as a doc writer might get it wrong, and right. */
const FIXTURE = "(fixture).md"
const fixture = extractBlocks(
  FIXTURE,
  [
    "# A page", //                                            line 1
    "",
    "```ts", //                                               line 3
    "import { Job } from \"leasehold\"",
    "const n: number = Job.define", //                        line 5: wrong
    "```",
    "",
    "<!-- prelude: declare const url: string -->", //        line 8
    "```ts",
    "import * as Postgres from \"leasehold/postgres\"",
    "export const Db = Postgres.clientLayer(url)",
    "```"
  ].join("\n")
)

let blocks: ReadonlyArray<Block> = []
let result: CheckResult

beforeAll(() => {
  blocks = documentationBlocks()
  result = checkBlocks([...blocks, ...fixture])
}, 120_000)

describe("the documentation's code blocks", () => {
  it("are found: README.md and docs/*.md have TypeScript blocks", () => {
    const docs = new Set(blocks.filter(isTypeScript).map((b) => b.doc))
    expect(docs).toContain("README.md")
    expect(docs).toContain("docs/promise-api.md")
    expect(blocks.filter(isTypeScript).length).toBeGreaterThanOrEqual(10)
  })

  it("every fence names its language (```text for output and illustrations)", () => {
    const problems = untaggedBlocks(blocks).map(formatProblem)
    expect(problems, problems.join("\n")).toEqual([])
  })

  it("every ```ts block type-checks as a module of its own", () => {
    const problems = result.problems.filter((p) => p.doc !== FIXTURE).map(formatProblem)
    expect(problems.length, `${problems.length} type errors in the documentation:\n${problems.join("\n")}\n`).toBe(0)
  })

  it("the examples that are also tests are those tests, but for their import paths", () => {
    const asTest = (file: string, skipFirstComment: boolean) => {
      const text = readFileSync(join(ROOT, file), "utf8")
        .replace(/"(\.\.\/)+src\/index\.ts"/g, "\"leasehold\"")
        .replace(/"(\.\.\/)+src\/testing\.ts"/g, "\"leasehold/testing\"")
      return withoutWhitespace(skipFirstComment ? text.replace(/^\/\*\*[\s\S]*?\*\/\n/, "") : text)
    }
    const block = (doc: string, marker: string) =>
      blocks.find((b) => b.doc === doc && isTypeScript(b) && b.code.includes(marker))?.code ?? `(no block in ${doc})`
    expect(withoutWhitespace(block("docs/testing.md", "a busy key defers the job")), "docs/testing.md's first test")
      .toBe(asTest("test/integration/readme-example.test.ts", true))
    expect(withoutWhitespace(block("docs/testing.md", "drain dies on a job")), "docs/testing.md's example")
      .toBe(asTest("test/integration/testing-kit.test.ts", false))
  })

  it("every file the pages cite exists in this repository", () => {
    const problems = docFiles()
      .flatMap((doc) => missingCitations(doc, readFileSync(join(ROOT, doc), "utf8")))
      .map(formatProblem)
    expect(problems, problems.join("\n")).toEqual([])
  })

  it("every link to an anchor names a heading of its page", () => {
    const problems = docFiles()
      .flatMap((doc) => anchorProblems(doc, readFileSync(join(ROOT, doc), "utf8")))
      .map(formatProblem)
    expect(problems, problems.join("\n")).toEqual([])
  })

  it("docs/README.md, the index, links every page of docs/", () => {
    expect(unindexedPages()).toEqual([])
  })

  it("README.md is a landing page: at most 300 lines", () => {
    expect(readFileSync(join(ROOT, "README.md"), "utf8").split("\n").length).toBeLessThanOrEqual(300)
  })

  it("imports of \"leasehold\" and its entry points resolve to src/", () => {
    expect(ENTRY_POINTS).toMatchObject({
      "leasehold": "src/index.ts",
      "leasehold/lease-lock": "src/LeaseLock.ts",
      "leasehold/testing": "src/testing.ts",
      "leasehold/promise": "src/promise.ts",
      "leasehold/postgres": "src/postgres.ts",
      "leasehold/mysql": "src/mysql.ts",
      "leasehold/sqlite": "src/sqlite.ts"
    })
    expect(result.resolved).toEqual(ENTRY_POINTS)
  })

  it("a broken block is reported with its file and line; a prelude supplies hidden context", () => {
    const problems = result.problems.filter((p) => p.doc === FIXTURE)
    expect(problems).toHaveLength(1)
    expect(problems[0]).toMatchObject({ doc: FIXTURE, line: 5 })
    expect(problems[0]!.message).toMatch(/^TS2322: Type .* is not assignable to type 'number'/)
    expect(formatProblem(problems[0]!)).toMatch(/^\(fixture\)\.md:5: TS2322/)
  })
})
