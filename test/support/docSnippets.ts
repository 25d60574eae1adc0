/**
 * The code blocks of the documentation (README.md, docs/*.md), and a type check of every
 * TypeScript one as a module of its own, with the TypeScript compiler API: test/unit/docs.test.ts.
 *
 * - A block is a fenced block (three or more backticks or tildes) with its info string's first
 *   word as its language. An opening fence without one is reported: a block that is an
 *   illustration (output, a shape, a tree) says ```text.
 * - ```ts and ```typescript blocks are written to a temporary directory under
 *   node_modules/.cache/ (so `effect`, `@effect/sql`, … resolve from this repository's
 *   node_modules) and type-checked together, each as its own module: strict, module NodeNext,
 *   with "leasehold" and "leasehold/<entry>" mapped to the sources in src/ (`ENTRY_POINTS`).
 * - Context a reader need not see goes in an HTML comment right before the fence,
 *   `<!-- prelude: declare const url: string -->`, prepended to the block when it is checked.
 *   Prefer complete snippets.
 * - A diagnostic is reported as `<doc>:<line>`, the line in the Markdown file.
 *
 * `missingCitations` finds the repository files a page names (a relative link, or a path such as
 * `src/core/lease.ts`) that do not exist.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import ts from "typescript"

export const ROOT = join(import.meta.dirname, "..", "..")

/**
 * What each of the package's entry points is in src/: package.json's "exports", under the
 * "leasehold-source" condition (`"leasehold/promise"` → `src/promise.ts`).
 */
export const ENTRY_POINTS: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(
    (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
      readonly exports: Record<string, string | Record<string, string>>
    }).exports
  ).flatMap(([path, target]) => {
    const source = typeof target === "string" ? undefined : target["leasehold-source"]
    return source === undefined ? [] : [[`leasehold${path.slice(1)}`, source.replace(/^\.\//, "")]]
  })
)

/**
 * The Markdown files whose blocks are checked: README.md, CONTRIBUTING.md, bench/README.md and
 * docs/*.md, relative to the root.
 */
export const docFiles = (): ReadonlyArray<string> => [
  "README.md",
  "CONTRIBUTING.md",
  "bench/README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .sort()
    .map((f) => `docs/${f}`)
]

/** A fenced block of a Markdown file. */
export interface Block {
  /** The Markdown file, e.g. `docs/testing.md`. */
  readonly doc: string
  /** The line of the opening fence (1-based). */
  readonly line: number
  /** The info string's first word, lowercased ("" when there is none). */
  readonly lang: string
  /** The block's content. */
  readonly code: string
  /** The `<!-- prelude: … -->` comment right before the fence, if any. */
  readonly prelude: string | undefined
}

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)/

/** The fenced blocks of one Markdown text. An unclosed block runs to the end, as in CommonMark. */
export const extractBlocks = (doc: string, text: string): ReadonlyArray<Block> => {
  const lines = text.split(/\r?\n/)
  const blocks: Array<Block> = []
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!)
    if (open === null) continue
    const fence = open[1]!
    const body: Array<string> = []
    let j = i + 1
    for (; j < lines.length; j++) {
      const close = FENCE.exec(lines[j]!)
      if (close !== null && close[1]![0] === fence[0] && close[1]!.length >= fence.length && close[2] === "") break
      body.push(lines[j]!)
    }
    blocks.push({
      doc,
      line: i + 1,
      lang: open[2]!.toLowerCase(),
      code: body.join("\n"),
      prelude: preludeBefore(lines, i)
    })
    i = j
  }
  return blocks
}

/** The text of a `<!-- prelude: … -->` comment that ends on the line before `fence`. */
const preludeBefore = (lines: ReadonlyArray<string>, fence: number): string | undefined => {
  const end = fence - 1
  if (end < 0 || !lines[end]!.trimEnd().endsWith("-->")) return undefined
  let start = end
  while (start >= 0 && !lines[start]!.includes("<!--")) start--
  if (start < 0) return undefined
  const comment = lines.slice(start, end + 1).join("\n").trim()
  const match = /^<!--\s*prelude:([\s\S]*)-->$/.exec(comment)
  return match === null ? undefined : match[1]!.trim()
}

/** Whether a block is TypeScript, and so type-checked. */
export const isTypeScript = (block: Block): boolean => block.lang === "ts" || block.lang === "typescript"

/** The compiler options the blocks are checked under: a strict NodeNext consumer of the package. */
export const compilerOptions = (): ts.CompilerOptions => ({
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  lib: ["lib.es2022.d.ts"],
  types: ["node"],
  strict: true,
  noEmit: true,
  skipLibCheck: true,
  // src/ imports its own modules with ".ts" extensions.
  allowImportingTsExtensions: true,
  // Every block is a module, also one without imports, so blocks never share top-level names.
  moduleDetection: ts.ModuleDetectionKind.Force,
  paths: Object.fromEntries(Object.entries(ENTRY_POINTS).map(([name, file]) => [name, [join(ROOT, file)]]))
})

/** A problem found in the documentation, located in its Markdown file. */
export interface Problem {
  readonly doc: string
  readonly line: number
  readonly message: string
}

export const formatProblem = (p: Problem): string => `${p.doc}:${p.line}: ${p.message}`

/** Opening fences without a language: an illustration says ```text, code says its language. */
export const untaggedBlocks = (blocks: ReadonlyArray<Block>): ReadonlyArray<Problem> =>
  blocks.filter((b) => b.lang === "").map((b) => ({
    doc: b.doc,
    line: b.line,
    message: "a fence without a language: say ```text for output or an illustration, or the code's language"
  }))

/** What `checkBlocks` did. */
export interface CheckResult {
  readonly problems: ReadonlyArray<Problem>
  /** The module each block was checked as (inside the temporary directory, deleted afterwards). */
  readonly files: ReadonlyArray<string>
  /** What each import of a "leasehold" entry point resolved to, relative to the root. */
  readonly resolved: Readonly<Record<string, string | undefined>>
}

/**
 * Type-checks the TypeScript blocks, each as its own module, in one program. The modules live in
 * a fresh directory under node_modules/.cache/docs-check/, removed before this returns.
 */
export const checkBlocks = (blocks: ReadonlyArray<Block>): CheckResult => {
  const base = join(ROOT, "node_modules", ".cache", "docs-check")
  mkdirSync(base, { recursive: true })
  const dir = mkdtempSync(join(base, "run-"))
  try {
    // An ES module scope of its own, whatever the files around it say.
    writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module", private: true }))
    const sources = blocks.filter(isTypeScript).map((block) => {
      const prelude = block.prelude === undefined ? [] : block.prelude.split("\n")
      const name = `${block.doc.replace(/[^\w]+/g, "_")}_L${block.line}.ts`
      const file = join(dir, name)
      writeFileSync(file, [...prelude, block.code, ""].join("\n"))
      return { block, file, preludeLines: prelude.length }
    })
    const options = compilerOptions()
    const host = ts.createCompilerHost(options)
    const program = ts.createProgram({ rootNames: sources.map((s) => s.file), options, host })

    const problems: Array<Problem> = []
    const messageOf = (d: ts.Diagnostic) => `TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`
    for (const d of [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()]) {
      problems.push({ doc: "(compiler options)", line: 0, message: messageOf(d) })
    }
    for (const { block, file, preludeLines } of sources) {
      const sf = program.getSourceFile(file)
      if (sf === undefined) {
        problems.push({ doc: block.doc, line: block.line, message: "the block was not compiled" })
        continue
      }
      const diagnostics = [...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf)]
      for (const d of diagnostics) {
        const at = d.start === undefined ? 0 : sf.getLineAndCharacterOfPosition(d.start).line
        // Line 0 of the block's own code is the line after the fence; the prelude is the comment.
        const inPrelude = at < preludeLines
        const line = inPrelude ? block.line - 1 : block.line + 1 + at - preludeLines
        const text = inPrelude ? "(in the prelude)" : sf.text.split("\n")[at]?.trim() ?? ""
        problems.push({ doc: block.doc, line, message: `${messageOf(d)}\n    ${text}` })
      }
    }
    const resolved: Record<string, string | undefined> = {}
    const from = sources[0]?.file ?? join(dir, "probe.ts")
    for (const name of Object.keys(ENTRY_POINTS)) {
      const r = ts.resolveModuleName(name, from, options, host).resolvedModule
      resolved[name] = r === undefined ? undefined : relative(ROOT, r.resolvedFileName)
    }
    return { problems, files: sources.map((s) => relative(dir, s.file)), resolved }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Every block of every documentation file. */
export const documentationBlocks = (): ReadonlyArray<Block> =>
  docFiles().flatMap((doc) => extractBlocks(doc, readFileSync(join(ROOT, doc), "utf8")))

/** The top-level folders of this repository a page may cite files in, as `src/core/lease.ts`. */
const CITED_PATH = /(?<![\w./@-])(?:src|test|docs|examples|scripts|bench|bin)\/[\w./-]*\w/g
/** A Markdown link or image target: `](target)`. */
const LINK = /\]\(([^)\s]+)\)/g

/**
 * The files a page cites that this repository does not have: relative link targets (resolved
 * from the page's folder) and paths under the repository's top-level folders (from the root).
 * Globs and placeholders (`test/adapters/*.test.ts`, `src/adapters/<name>/`) are checked up to
 * the folder before them.
 */
export const missingCitations = (doc: string, text: string): ReadonlyArray<Problem> => {
  const problems: Array<Problem> = []
  text.split(/\r?\n/).forEach((content, i) => {
    for (const [, target] of content.matchAll(LINK)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target!) || target!.startsWith("#")) continue
      const path = join(dirname(doc), target!.replace(/#.*$/, ""))
      if (!existsSync(join(ROOT, path))) {
        problems.push({ doc, line: i + 1, message: `the link target ${target} (${path}) does not exist` })
      }
    }
    for (const [path] of content.matchAll(CITED_PATH)) {
      if (!existsSync(join(ROOT, path))) {
        problems.push({ doc, line: i + 1, message: `${path} does not exist in this repository` })
      }
    }
  })
  return problems
}

/** Code with its whitespace removed, to compare a page's copy of a file with the file. */
export const withoutWhitespace = (code: string): string => code.replace(/\s+/g, "")

/** GitHub's anchor for a heading: lowercase, punctuation dropped, spaces as hyphens. */
export const anchorOf = (heading: string): string =>
  heading.trim().toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, "").replace(/ /g, "-")

/** The anchors of a Markdown page's headings (outside code blocks). */
const anchorsOf = (text: string): ReadonlySet<string> =>
  new Set([...text.replace(/^```[\s\S]*?^```/gm, "").matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchorOf(m[1]!)))

/**
 * The links of page `doc` to an anchor (`](#anchor)`, `](page.md#anchor)`) that names no heading
 * of the page it points at.
 */
export const anchorProblems = (doc: string, text: string): ReadonlyArray<Problem> => {
  const problems: Array<Problem> = []
  text.split(/\r?\n/).forEach((content, i) => {
    for (const [, target] of content.matchAll(LINK)) {
      const [path, anchor] = target!.split("#")
      if (anchor === undefined || /^[a-z][a-z0-9+.-]*:/i.test(target!)) continue
      const page = path === "" ? doc : join(dirname(doc), path!)
      if (!page.endsWith(".md") || !existsSync(join(ROOT, page))) continue
      const anchors = page === doc ? anchorsOf(text) : anchorsOf(readFileSync(join(ROOT, page), "utf8"))
      if (!anchors.has(anchor)) problems.push({ doc, line: i + 1, message: `${target} names no heading of ${page}` })
    }
  })
  return problems
}

/** The pages under docs/ that docs/README.md, the index, does not link to. */
export const unindexedPages = (): ReadonlyArray<string> => {
  const index = readFileSync(join(ROOT, "docs", "README.md"), "utf8")
  return readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md") && f !== "README.md" && !index.includes(`](${f})`))
}
