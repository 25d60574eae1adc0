/**
 * The package as a user gets it: `npm pack`, then, in an empty project, README.md's own install
 * commands run as written (the `sh` blocks after `<!-- install: sqlite -->` and `<!-- install:
 * cli -->`, `leasehold` standing for the tarball, which is not on the registry), against the
 * registry. They must install without a conflict or a peer warning, and bring no package that
 * only the command line uses, nor another database's driver. From there: the README's first job
 * (the block after `<!-- first-job: … -->`) runs with `npx tsx`; a plain `node` ESM script
 * defines a job, enqueues it and runs it to completion; a TypeScript consumer compiles under
 * `tsc` (module NodeNext, strict, no special flags), where a payload of the wrong type must fail;
 * the `leasehold` command, before its own packages are installed, says which to install, and
 * after the README's command for them answers `--help` and migrates.
 *
 * Speed: packages come from npm's cache when it has them (`npm_config_prefer_offline`), and
 * install scripts are skipped (`npm_config_ignore_scripts`; the commands themselves are as
 * written): the one native module, better-sqlite3, gets the binary this repository's own install
 * built when the versions match (same Node), else it is rebuilt. Once installed, the checks run
 * side by side (each writes files of its own). The TypeScript check is tsc's incremental one, its
 * build info kept between runs (see `TSBUILDINFO`).
 */
import { execFile } from "node:child_process"
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync
} from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, it } from "vitest"

const exec = promisify(execFile)
const ROOT = join(import.meta.dirname, "..", "..")
const own = (name: string) => JSON.parse(readFileSync(join(ROOT, "node_modules", name, "package.json"), "utf8"))
const dir = mkdtempSync(join(tmpdir(), "leasehold-pkg-"))
const consumer = join(dir, "app")
let files: ReadonlyArray<string> = []

/**
 * tsc's build info for the consumer, kept between runs: what tsc found in each file, keyed by a
 * hash of the file's text (and the compiler's version and options), so effect's declaration
 * files, which most of the check is about, are not checked again while they are unchanged
 * (9 s → 3 s here). Anything that changed (leasehold's own declarations, app.ts), and whatever
 * depends on it, is checked again, and errors recorded earlier are reported again: the result is
 * that of a full check, as tsc's `--incremental` promises. The paths in it are relative to the
 * consumer, which is at the same depth under the temporary directory every run.
 */
const TSBUILDINFO = join(ROOT, "node_modules", ".cache", "leasehold-package-test", "consumer.tsbuildinfo")

afterAll(() => rmSync(dir, { recursive: true, force: true }))

const README = readFileSync(join(ROOT, "README.md"), "utf8")

/** The text of the README's block of `lang` right after `<!-- marker -->`. */
const readmeBlock = (marker: string, lang: string): string => {
  const at = README.indexOf(`<!-- ${marker} -->\n\`\`\`${lang}\n`)
  if (at < 0) throw new Error(`README.md has no \`\`\`${lang} block after <!-- ${marker} -->`)
  const start = README.indexOf("\n", README.indexOf("```", at)) + 1
  return README.slice(start, README.indexOf("\n```", start) + 1)
}

/** The README's install commands after `<!-- install: name -->`, one per line, comments dropped. */
const readmeCommands = (name: string): ReadonlyArray<string> =>
  readmeBlock(`install: ${name}`, "sh").split("\n").map((l) => l.replace(/\s+#.*$/, "").trim()).filter((l) => l !== "")

/** npm as the README's reader runs it, but from the cache when it can and without install scripts. */
const npmEnv = {
  ...process.env,
  npm_config_prefer_offline: "true",
  npm_config_ignore_scripts: "true",
  npm_config_audit: "false",
  npm_config_fund: "false",
  npm_config_update_notifier: "false"
}

/** What npm printed on stderr running the README's commands (conflicts and peer warnings show there). */
let installOutput = ""
/** `npm ls` of the app once the library is installed, before the command line's packages. */
let libraryPackages: ReadonlyArray<string> = []
/** The command run before its own packages were installed. */
let withoutCli: { code: number | undefined; stderr: string } = { code: undefined, stderr: "" }

const runReadmeCommands = async (name: string, tarball: string) => {
  for (const command of readmeCommands(name)) {
    const [npm, ...args] = command.split(/\s+/).map((arg) => (arg === "leasehold" ? tarball : arg))
    if (npm !== "npm") throw new Error(`README install command is not npm: ${command}`)
    const { stderr } = await exec("npm", args, { cwd: consumer, encoding: "utf8", env: npmEnv, timeout: 240_000 })
    installOutput += `$ ${command}\n${stderr}`
  }
}

beforeAll(async () => {
  // dist/ is fresh (the suite's global setup builds it); --ignore-scripts so packing does not
  // rebuild it under the other test files that are using it.
  const packed = await exec("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", dir], {
    cwd: ROOT,
    encoding: "utf8"
  })
  const [info] = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>
  files = info!.files.map((f) => f.path)
  mkdirSync(consumer)
  writeFileSync(join(consumer, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }))
  const tarball = join(dir, info!.filename)
  await runReadmeCommands("sqlite", tarball)
  const ls = await exec("npm", ["ls", "--all", "--parseable"], { cwd: consumer, encoding: "utf8" })
  libraryPackages = ls.stdout.split("\n").map((p) => p.split("node_modules/").pop()!)
  withoutCli = await exec(join(consumer, "node_modules", ".bin", "leasehold"), ["migrate", "status"], {
    cwd: consumer,
    encoding: "utf8",
    env: { ...process.env, LEASEHOLD_DATABASE_URL: join(consumer, "none.db") }
  }).then(
    () => ({ code: 0, stderr: "" }),
    (e: { code?: number; stderr?: string }) => ({ code: e.code, stderr: e.stderr ?? "" })
  )
  await runReadmeCommands("cli", tarball)
  const installed = JSON.parse(readFileSync(join(consumer, "node_modules", "better-sqlite3", "package.json"), "utf8"))
  if (installed.version === own("better-sqlite3").version) {
    cpSync(
      join(ROOT, "node_modules", "better-sqlite3", "build"),
      join(consumer, "node_modules", "better-sqlite3", "build"),
      { recursive: true }
    )
  } else {
    await exec("npm", ["rebuild", "better-sqlite3"], { cwd: consumer, encoding: "utf8", timeout: 240_000 })
  }
}, 600_000)

describe("the packed tarball", { timeout: 120_000, concurrent: true }, () => {
  it("holds the compiled build, README, LICENSE and package.json, and nothing else", ({ expect }) => {
    expect(files.filter((f) => !f.startsWith("dist/")).sort()).toEqual(["LICENSE", "README.md", "package.json"])
    expect(files).toContain("dist/index.js")
    expect(files).toContain("dist/index.d.ts")
    expect(files.some((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"))).toBe(false)
  })

  it("installs by the README's commands without a conflict or a peer warning", ({ expect }) => {
    expect(installOutput).not.toMatch(/ERESOLVE|overriding peer dependency|Could not resolve|conflicting peer/i)
  })

  it("brings neither another database's driver nor a package only the command line uses", ({ expect }) => {
    expect(libraryPackages).toContain("better-sqlite3")
    for (
      const absent of [
        "pg",
        "@effect/sql-pg",
        "mysql2",
        "@effect/sql-mysql2",
        "@effect/cli",
        "@effect/platform-node",
        "@effect/cluster",
        "@effect/rpc",
        "@effect/workflow",
        "@parcel/watcher"
      ]
    ) {
      expect(libraryPackages).not.toContain(absent)
    }
  })

  it("publishes no install script and no declaration map", ({ expect }) => {
    const manifest = JSON.parse(readFileSync(join(consumer, "node_modules", "leasehold", "package.json"), "utf8"))
    for (const script of ["preinstall", "install", "postinstall", "prepare"]) {
      expect(manifest.scripts?.[script]).toBeUndefined()
    }
    expect(files.some((f) => f.endsWith(".d.ts.map"))).toBe(false)
  })

  it("runs the README's first job with npx tsx", async ({ expect }) => {
    writeFileSync(join(consumer, "first-job.ts"), readmeBlock("first-job: first-job.ts", "ts"))
    const { stdout } = await exec("npx", ["tsx", "first-job.ts"], { cwd: consumer, encoding: "utf8", env: npmEnv })
    expect(stdout).toMatch(/welcome [0-9a-f-]{36}/)
    expect(stdout).toMatch(/processed\W+1\b/)
  })

  it("runs a job to completion from a plain node ESM script", async ({ expect }) => {
    writeFileSync(
      join(consumer, "run.mjs"),
      `import { Effect, Layer, Schema } from "effect"
import { Job, Migrator, Worker } from "leasehold"
import * as Sqlite from "leasehold/sqlite"

const Hello = Job.define({
  name: "Hello",
  schema: Schema.Struct({ name: Schema.String }),
  perform: ({ name }) => Effect.sync(() => console.log("hello " + name))
})
const program = Effect.gen(function*() {
  yield* (yield* Migrator.make()).run
  const { id } = yield* Job.enqueue(Hello, { name: "tarball" })
  const tally = yield* Worker.processQueue({ limit: 10 })
  console.log(JSON.stringify({ id, processed: tally.processed, failed: tally.failed }))
})
await Effect.runPromise(program.pipe(Effect.provide(Sqlite.layer({ filename: "app.db", jobs: [Hello] }))))
`
    )
    const { stdout } = await exec(process.execPath, ["run.mjs"], { cwd: consumer, encoding: "utf8" })
    expect(stdout).toContain("hello tarball")
    expect(JSON.parse(stdout.trim().split("\n").pop()!)).toMatchObject({ processed: 1, failed: 0 })
  })

  it("compiles a strict NodeNext TypeScript consumer, and rejects a payload of the wrong type", async ({ expect }) => {
    writeFileSync(
      join(consumer, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          module: "NodeNext",
          moduleResolution: "NodeNext",
          target: "ES2022",
          strict: true,
          noEmit: true
        },
        files: ["app.ts"]
      })
    )
    writeFileSync(
      join(consumer, "app.ts"),
      `import { Effect, Schema } from "effect"
import { Job, Leasehold, PayloadError } from "leasehold"
import { createLeasehold, defineJob } from "leasehold/promise"

export const Hello = Job.define({
  name: "Hello",
  schema: Schema.Struct({ name: Schema.String }),
  perform: ({ name }) => Effect.logInfo(name)
})
export const services = Leasehold.layer({ jobs: [Hello] })
export const ok = Job.enqueue(Hello, { name: "typed" })
// @ts-expect-error: name must be a string
export const wrong = Job.enqueue(Hello, { name: 42 })
export const isPayloadError = (e: unknown): e is PayloadError => e instanceof PayloadError

const Mail = defineJob({ name: "Mail", schema: Schema.Struct({ to: Schema.String }), perform: async ({ to }) => void to })
export const main = async () => {
  const lh = await createLeasehold({ url: "app.db", jobs: [Mail] })
  await lh.enqueue(Mail, { to: "a@example.com" })
  // @ts-expect-error: to must be a string
  await lh.enqueue(Mail, { to: 1 })
  await lh.close()
}
`
    )
    const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc")
    const info = join(consumer, "consumer.tsbuildinfo")
    if (existsSync(TSBUILDINFO)) copyFileSync(TSBUILDINFO, info)
    const result = await exec(
      process.execPath,
      [tsc, "-p", "tsconfig.json", "--incremental", "--tsBuildInfoFile", info],
      { cwd: consumer, encoding: "utf8" }
    )
      .then(() => ({ code: 0, out: "" }))
      .catch((e: { code?: number; stdout?: string }) => ({ code: e.code ?? 1, out: e.stdout ?? "" }))
    // Kept for the next run; renamed into place, so that a run alongside never reads half a file.
    if (existsSync(info)) {
      mkdirSync(join(TSBUILDINFO, ".."), { recursive: true })
      copyFileSync(info, `${TSBUILDINFO}.${process.pid}`)
      renameSync(`${TSBUILDINFO}.${process.pid}`, TSBUILDINFO)
    }
    expect(result.out).toBe("")
    expect(result.code).toBe(0)
  })

  it("the command says which packages to install until they are", ({ expect }) => {
    expect(withoutCli.code).toBe(1)
    expect(withoutCli.stderr).toBe(
      `leasehold: the command line's packages are not installed (cannot load @effect/cli): ${
        readmeCommands("cli")[0]
      }\n`
    )
  })

  it("with the README's command for its packages, the command answers --help and migrates", async ({ expect }) => {
    const bin = join(consumer, "node_modules", ".bin", "leasehold")
    const help = await exec(bin, ["--help"], { cwd: consumer, encoding: "utf8" })
    expect(help.stdout).toMatch(/migrate/)
    const migrated = await exec(bin, ["migrate", "--json"], {
      cwd: consumer,
      encoding: "utf8",
      env: { ...process.env, LEASEHOLD_DATABASE_URL: join(consumer, "cli.db") }
    })
    expect(JSON.parse(migrated.stdout)).toMatchObject({ applied: expect.any(Array) })
  })

  it("pointed at a database whose driver is not installed, says which packages to install", async ({ expect }) => {
    const bin = join(consumer, "node_modules", ".bin", "leasehold")
    const failed = await exec(bin, ["migrate", "status"], {
      cwd: consumer,
      encoding: "utf8",
      env: { ...process.env, LEASEHOLD_DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" }
    }).then(() => undefined, (e: { code?: number; stderr?: string }) => e)
    expect(failed?.code).not.toBe(0)
    expect(failed?.stderr).toMatch(/PostgreSQL driver is not installed.*npm install pg@\^8 @effect\/sql-pg@\^0\.53/)
    expect(failed?.stderr).not.toMatch(/\n\s+at /)
  })
})
