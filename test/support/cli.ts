/**
 * The CLI end to end on SQLite, PostgreSQL and MariaDB: migrate, enqueue, jobs, leases,
 * drain/resume/status, bad input (one line on stderr, exit ≠ 0, no stack trace), and a worker
 * that finishes its running job when sent SIGTERM; then how it behaves (issue 12, item 6):
 * database URLs, errors and their hints, option errors, colour, help, log levels, table widths,
 * JSON, and the `--help` pages served without loading the CLI. What does not depend on the
 * database runs once, in the SQLite file.
 *
 * It is the compiled CLI (dist/, built first by vitest's global setup, test/support/build.ts),
 * loaded by node itself (vitest.config.ts leaves dist/ to node), so the job fixtures' imports
 * of "leasehold" meet the CLI's own modules, as they do for the installed binary. Most commands
 * run in this process (`runInProcess` of src/cli/main.ts: the same code with the environment
 * given and the output captured, what bin.js would print for a help page first, as bin.js does;
 * src/cli/fastHelp.ts), since a process of its own costs each command most of a second of module
 * loading. What only a process of its own shows runs as one (`spawned`): on every database a
 * migrate, an enqueue and a list through dist/cli/bin.js, and the worker stopped by SIGTERM; on
 * SQLite a worker under npm exec that stops once npm is killed, a failure's and a usage error's exit codes, the `--help` pages bin.js serves, colour
 * and width on a pseudo-terminal (`script`), and tsx registered for a TypeScript job module.
 */
import { execFile, spawn } from "node:child_process"
import { lookup } from "node:dns/promises"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import Sqlite from "better-sqlite3"
import mysql from "mysql2/promise"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { migrations } from "../../src/adapters/sql/schema.ts"
import { stripAnsi } from "../../src/cli/colour.ts"
import type * as FastHelp from "../../src/cli/fastHelp.ts"
import type * as CliMain from "../../src/cli/main.ts"
import { parseScrape } from "./prometheus.ts"
import { MYSQL_URL, PG_URL, uniquePrefix } from "./urls.ts"

const ROOT = join(import.meta.dirname, "..", "..")
const BIN = join(ROOT, "dist", "cli", "bin.js")
const MAIN = pathToFileURL(join(ROOT, "dist", "cli", "main.js")).href
const FAST_HELP = pathToFileURL(join(ROOT, "dist", "cli", "fastHelp.js")).href
const HELP_PAGES = join(ROOT, "src", "cli", "helpPages.ts")
const JOBS = join(import.meta.dirname, "..", "fixtures", "jobs.mjs")
const TYPESCRIPT_JOBS = join(import.meta.dirname, "..", "fixtures", "typescript-jobs.ts")
const THROWING_JOBS = join(import.meta.dirname, "..", "fixtures", "throwing-jobs.mjs")
const FAILING_EFFECT_JOBS = join(import.meta.dirname, "..", "fixtures", "failing-effect-jobs.mjs")

/** A command slower than this is reported (not failed): the machines are shared and noisy. */
const SLOW_COMMAND_MS = 10_000

/** The compiled CLI, as bin.js loads it (node's own import: vitest.config.ts leaves dist/ to node). */
const cliMain = await import(MAIN) as typeof CliMain
const { fastHelp } = await import(FAST_HELP) as typeof FastHelp
/** What writes src/cli/helpPages.ts (`npm run build`). */
const helpPagesScript = await import(pathToFileURL(join(ROOT, "scripts", "help-pages.mjs")).href) as {
  readonly helpPages: () => Promise<Record<string, string>>
  readonly helpPagesSource: (pages: Record<string, string>) => string
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const dir = mkdtempSync(join(tmpdir(), "leasehold-cli-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Whether `script` (util-linux) is here to run the CLI on a pseudo-terminal. */
const hasScript = existsSync("/usr/bin/script")

/** Whether process `pid` runs (Linux's /proc): not there, or a zombie nobody reaped yet, is gone. */
const running = (pid: number): boolean => {
  try {
    return !/^\d+ \(.*\) Z /s.test(readFileSync(`/proc/${pid}/stat`, "utf8"))
  } catch {
    return false
  }
}

/** The processes below `root` (Linux's /proc), each with its command line. */
const descendants = (root: number): ReadonlyArray<{ readonly pid: number; readonly argv: ReadonlyArray<string> }> => {
  const children = new Map<number, Array<number>>()
  for (const name of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8")
      const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
      children.set(parent, [...(children.get(parent) ?? []), Number(name)])
    } catch {
      // gone meanwhile
    }
  }
  const found: Array<{ pid: number; argv: ReadonlyArray<string> }> = []
  const visit = (pid: number) => {
    for (const child of children.get(pid) ?? []) {
      try {
        found.push({ pid: child, argv: readFileSync(`/proc/${child}/cmdline`, "utf8").split("\0") })
      } catch {
        // gone meanwhile
      }
      visit(child)
    }
  }
  visit(root)
  return found
}

/**
 * One query on a server database, on a connection of its own: the test asks the database
 * directly (quicker than the CLI) and cleans up after itself.
 */
const serverQuery = async (
  name: "postgres" | "mysql",
  sql: string
): Promise<ReadonlyArray<Record<string, unknown>>> => {
  if (name === "mysql") {
    const connection = await mysql.createConnection(MYSQL_URL)
    try {
      return (await connection.query(sql))[0] as Array<Record<string, unknown>>
    } finally {
      await connection.end()
    }
  }
  const client = new pg.Client({ connectionString: PG_URL })
  await client.connect()
  try {
    return (await client.query(sql)).rows
  } finally {
    await client.end()
  }
}

/** `url` with another database name, user or port. */
const changed = (url: string, change: (u: URL) => void): string => {
  const u = new URL(url)
  change(u)
  return u.href
}

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

interface Result {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** How test/support/cli.ts runs one command. */
interface RunOptions {
  readonly env?: NodeJS.ProcessEnv
  readonly cwd?: string
  /** dist/cli/bin.js in a process of its own instead of this one. */
  readonly spawned?: boolean
  /** In this process: interrupts the run the way SIGTERM stops the binary (a worker). */
  readonly signal?: AbortSignal
  /** In this process: each piece of stderr as it is written (a running worker's log lines). */
  readonly onStderr?: (text: string) => void
  /** In this process: stdout and stderr are a terminal this many columns wide. */
  readonly terminal?: number
}

/**
 * Registers a test only where it applies: a check that does not depend on the database runs once,
 * on SQLite, and is not reported as skipped on the others.
 */
const onlyWhere = (applies: boolean): typeof it => (applies ? it : ((() => undefined) as unknown as typeof it))

/** The CLI suite against one database; test/cli-*.test.ts run it (as separate files, in parallel). */
export const cliSuite = (targetName: "sqlite" | "postgres" | "mysql") => {
  const target = targetName === "sqlite"
    ? { name: "sqlite", url: join(dir, "cli.db"), prefix: "leasehold_" } as const
    : targetName === "postgres"
    ? { name: "postgres", url: PG_URL, prefix: uniquePrefix("cli") } as const
    : { name: "mysql", url: MYSQL_URL, prefix: uniquePrefix("cli") } as const
  describe(`leasehold CLI on ${target.name}`, { timeout: 120_000 }, () => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      LEASEHOLD_DATABASE_URL: target.url,
      LEASEHOLD_JOBS: JOBS,
      NO_COLOR: undefined,
      FORCE_COLOR: undefined,
      COLUMNS: undefined,
      LEASEHOLD_PREFIX: undefined
    }
    /** dist/cli/bin.js in a process of its own: what a real exit code, signals or a terminal need. */
    const spawned = (args: ReadonlyArray<string>, runEnv: NodeJS.ProcessEnv, cwd?: string) =>
      new Promise<Result>((resolve) => {
        // Asynchronous, so the test worker's event loop stays free while the command runs.
        execFile(
          process.execPath,
          [BIN, ...args],
          { env: runEnv, cwd, encoding: "utf8", timeout: 60_000 },
          (error, stdout, stderr) =>
            resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, stdout, stderr })
        )
      })
    /**
     * The CLI in this process, as bin.js runs it: a help page without loading the CLI if it is
     * one, else the CLI with `runEnv` for its environment. Its output is no terminal (as when
     * piped) unless `terminal` says so. A working directory is this process's: changed for the
     * run only (a file's tests run one at a time).
     */
    const inProcess = async (args: ReadonlyArray<string>, runEnv: NodeJS.ProcessEnv, options: RunOptions) => {
      const previous = process.cwd()
      if (options.cwd !== undefined) process.chdir(options.cwd)
      try {
        const page = await fastHelp(args, { isTTY: options.terminal !== undefined }, runEnv)
        if (page !== undefined) return { code: 0, stdout: page, stderr: "" }
        return await cliMain.runInProcess(args, {
          env: runEnv,
          signal: options.signal,
          onStderr: options.onStderr,
          terminal: options.terminal === undefined ? undefined : { columns: options.terminal }
        })
      } finally {
        process.chdir(previous)
      }
    }
    /** One command, in this process unless `spawned`; a slow one is reported on stderr rather than hidden. */
    const run = async (args: ReadonlyArray<string>, options: RunOptions = {}): Promise<Result> => {
      const started = Date.now()
      const runEnv = { ...env, ...options.env }
      const result = options.spawned === true
        ? await spawned(args, runEnv, options.cwd)
        : await inProcess(args, runEnv, options)
      const took = Date.now() - started
      if (took > SLOW_COMMAND_MS) {
        console.warn(`leasehold ${args.slice(0, 2).join(" ")} took ${(took / 1000).toFixed(1)} s (machine under load?)`)
      }
      return result
    }
    const cli = (...args: Array<string>) => run([...args, "--prefix", target.prefix])
    /** `cli`, through dist/cli/bin.js in a process of its own. */
    const spawnedCli = (...args: Array<string>) => run([...args, "--prefix", target.prefix], { spawned: true })
    const parsed = async (result: Promise<Result>) => {
      const r = await result
      expect(r.stderr).toBe("")
      expect(r.code).toBe(0)
      return JSON.parse(r.stdout)
    }
    const json = (...args: Array<string>) => parsed(cli(...args, "--json"))
    /** `json`, through dist/cli/bin.js in a process of its own. */
    const spawnedJson = (...args: Array<string>) => parsed(spawnedCli(...args, "--json"))
    const query = async (sql: string): Promise<ReadonlyArray<Record<string, unknown>>> => {
      if (target.name !== "sqlite") return serverQuery(target.name, sql)
      const db = new Sqlite(target.url)
      try {
        const statement = db.prepare(sql)
        return statement.reader ? statement.all() as Array<Record<string, unknown>> : (statement.run(), [])
      } finally {
        db.close()
      }
    }
    const statusOf = async (id: string): Promise<string | undefined> =>
      (await query(`SELECT status FROM ${target.prefix}jobs WHERE id = '${id}'`))[0]?.status as string | undefined
    const failsCleanly = (r: { code: number | null; stderr: string }, pattern: RegExp) => {
      expect(r.code).not.toBe(0)
      expect(r.stderr).toMatch(pattern)
      expect(r.stderr).not.toMatch(/\n\s+at /)
    }
    /** Exactly one line on stderr, `leasehold: ` and a message matching `pattern`, nothing on stdout. */
    const oneLine = (r: Result, code: number, pattern: RegExp) => {
      expect({ code: r.code, stdout: r.stdout }).toEqual({ code, stdout: "" })
      expect(r.stderr).toMatch(/^leasehold: [^\n]*\n$/)
      expect(r.stderr).toMatch(pattern)
    }

    // The server databases are shared: drop the tables under this run's prefix (the SQLite
    // file goes with the temporary directory).
    afterAll(async () => {
      if (target.name === "sqlite") return
      const schema = target.name === "mysql" ? "DATABASE()" : "current_schema()"
      const rows = await serverQuery(
        target.name,
        `SELECT table_name AS n FROM information_schema.tables WHERE table_schema = ${schema} AND table_name LIKE '${target.prefix}%'`
      )
      const names = rows.map((r) => String(r.n)).filter((n) => n.startsWith(target.prefix))
      const quote = (n: string) => (target.name === "mysql" ? `\`${n}\`` : `"${n}"`)
      for (const n of names) await serverQuery(target.name, `DROP TABLE IF EXISTS ${quote(n)}`)
    })

    it("migrate applies once; status reports applied, pending and the lock", async () => {
      // through the binary once: the installed command, as a user runs it
      const first = await spawnedJson("migrate")
      expect(first.applied.map((m: { id: number }) => m.id)).toEqual(migrations.map((m) => m.id))
      for (const m of first.applied) expect(m.appliedAt).toMatch(ISO)
      expect((await json("migrate")).applied).toEqual([])
      const status = await json("migrate", "status")
      expect(status.pending).toEqual([])
      expect(status.lock).toMatchObject({ held: false, acquiredAt: null, expiresAt: null })
      expect((await cli("migrate", "status")).stdout).toContain("lock: free")
    })

    it("enqueue, jobs list, stats, and the duplicate of a unique key", async () => {
      const a = await spawnedJson(
        "enqueue",
        "Greet",
        JSON.stringify({ name: "it's; -- ü" }),
        "--unique-key",
        "greet-1"
      )
      expect(a.status).toBe("pending")
      expect(await json("enqueue", "Greet", JSON.stringify({ name: "x" }), "--unique-key", "greet-1")).toMatchObject({
        id: a.id,
        duplicate: true
      })
      const listed = await spawnedJson("jobs", "list", "--status", "pending")
      expect(listed.map((r: { id: string }) => r.id)).toContain(a.id)
      const row = listed.find((r: { id: string }) => r.id === a.id)
      expect(JSON.parse(row.payload)).toEqual({ name: "it's; -- ü" })
      // JSON times are ISO-8601, absent ones null
      expect(row).toMatchObject({ runAt: expect.stringMatching(ISO), createdAt: expect.stringMatching(ISO) })
      expect(row.completedAt).toBeNull()
      expect(await json("jobs", "stats")).toContainEqual({ queue: "default", status: "pending", count: 1 })
      expect((await cli("jobs", "list")).stdout).toMatch(/id\s+name\s+queue\s+status/)
    })

    it("enqueue --many: a JSON array, lines of JSON or stdin; taken keys listed; bad input writes nothing", async () => {
      const prefix = `${target.prefix}many_`
      const many = (...args: Array<string>) => run([...args, "--prefix", prefix])
      expect((await many("migrate")).code).toBe(0)
      const array = join(dir, `${target.name}-many.json`)
      writeFileSync(array, JSON.stringify([{ name: "a" }, { name: "b" }, { name: "a" }]))
      const first = await parsed(
        many("enqueue", "Greet", "--many", array, "--unique-key-field", "name", "--unique-until", "finished", "--json")
      )
      expect(first).toMatchObject({ inserted: 2, duplicates: [{ index: 2, uniqueKey: "a", id: first.jobs[0].id }] })
      expect(first.jobs).toHaveLength(3)
      const lines = join(dir, `${target.name}-many.ndjson`)
      writeFileSync(lines, "{\"name\":\"b\"}\n\n{\"name\":\"c\"}\n")
      const text = await many("enqueue", "Greet", "--many", lines, "--unique-key-field", "name")
      expect(text).toMatchObject({ code: 0, stderr: "" })
      expect(text.stdout).toBe(`1 pending, 1 duplicate\nduplicate payloads[0] b ${first.jobs[1].id}\n`)
      // stdin, through the binary
      const piped = await new Promise<Result>((resolve) => {
        const child = execFile(
          process.execPath,
          [BIN, "enqueue", "Greet", "--many", "-", "--prefix", prefix, "--json"],
          { env, encoding: "utf8", timeout: 60_000 },
          (error, stdout, stderr) => resolve({ code: error === null ? 0 : 1, stdout, stderr })
        )
        child.stdin?.end("{\"name\":\"d\"}\n{\"name\":\"e\"}\n")
      })
      expect(piped).toMatchObject({ code: 0, stderr: "" })
      expect(JSON.parse(piped.stdout)).toMatchObject({ inserted: 2, duplicates: [] })

      writeFileSync(lines, "{\"name\":\"f\"}\n{\"nom\":1}\n")
      failsCleanly(await many("enqueue", "Greet", "--many", lines), /invalid payload for Greet \(payloads\[1\]\)/)
      writeFileSync(lines, "{\"name\":\"f\"}\n{oops\n")
      failsCleanly(await many("enqueue", "Greet", "--many", lines), /--many: line 2 is not valid JSON/)
      failsCleanly(await many("enqueue", "Greet", "{}", "--many", array), /give no <payload-json>/)
      failsCleanly(await many("enqueue", "Greet", "--many", array, "--unique-key", "k"), /use --unique-key-field/)
      failsCleanly(await many("enqueue", "Greet", "--many", join(dir, "none.json")), /--many: cannot read/)
      failsCleanly(await many("enqueue", "Greet", "{}", "--unique-key-field", "name"), /goes with --many/)
      expect(await parsed(many("jobs", "list", "--json"))).toHaveLength(5)
    })

    it("bad input: one line on stderr, a non-zero exit, no stack trace, nothing written", async () => {
      // through the binary once (the database plays no part: on SQLite only): its exit code and
      // its stderr, as a shell sees them
      failsCleanly(
        await (target.name === "sqlite" ? spawnedCli : cli)("enqueue", "Greet", "{not json"),
        /^leasehold: payload is not valid JSON/
      )
      failsCleanly(await cli("enqueue", "Greet", JSON.stringify({ nom: 1 })), /^leasehold: invalid payload for Greet/)
      failsCleanly(await cli("enqueue", "Nope", "{}"), /^leasehold: unknown job "Nope"; known: /)
      failsCleanly(
        await cli("enqueue", "Greet", JSON.stringify({ name: "x" }), "--unique-key", "k".repeat(256)),
        /uniqueKey/
      )
      failsCleanly(await cli("jobs", "purge", "--older-than", "soon"), /not a duration/)
      failsCleanly(await cli("leases", "clear", "no-such-lease"), /no lease named/)
      failsCleanly(
        await cli("jobs", "retry", "00000000-0000-0000-0000-000000000000"),
        /no failed, interrupted or cancelled job/
      )
      expect((await cli("frobnicate")).code).not.toBe(0)
      failsCleanly(
        await run(["jobs", "stats", "--database-url", "postgres://postgres@127.0.0.1:1/none"]),
        /^leasehold: cannot connect to the database/
      )
      expect((await json("jobs", "stats")).reduce((n: number, c: { count: number }) => n + c.count, 0)).toBe(1)
    })

    it("on tables never migrated, every command that reads or writes them says so and how to migrate, exit 1", async () => {
      const none = `${target.prefix}none_`
      const missing = new RegExp(
        `^leasehold: leasehold's tables \\(prefix ${none}\\) are missing \\(` +
          `(no such table: ${none}\\w+|relation "${none}\\w+" does not exist|Table '\\w+\\.${none}\\w+' doesn't exist)\\): ` +
          `run the migrations first, with \`leasehold migrate --prefix ${none}\` or ` +
          `Migrator\\.make\\(\\{ prefix: "${none}" \\}\\)\\.run from code\\n$`
      )
      const id = "00000000-0000-0000-0000-000000000000"
      const commands = [
        ["leases", "list"],
        ["leases", "list", "--json"],
        ["leases", "clear", "x"],
        ["jobs", "list"],
        ["jobs", "list", "--json"],
        ["jobs", "show", id],
        ["jobs", "why", id],
        ["jobs", "stats"],
        ["jobs", "retry", id],
        ["jobs", "discard", "--all"],
        ["jobs", "cancel", "--queue", "q"],
        ["jobs", "purge"],
        ["status"],
        ["schedules"],
        ["drain", "--host", "h"],
        ["limits", "list"],
        ["limits", "set", "--type", "Greet", "--pause"],
        ["enqueue", "Greet", "{\"name\":\"x\"}"]
      ]
      for (const args of commands) oneLine(await run([...args, "--prefix", none]), 1, missing)
      // what is pending is what migrate status is for
      const status = await parsed(run(["migrate", "status", "--json", "--prefix", none]))
      expect(status.applied).toEqual([])
      expect(status.pending.map((m: { id: number }) => m.id)).toEqual(migrations.map((m) => m.id))
    })

    it("the migrate hint follows a missing table only, never a missing database, a refused login or connection", async () => {
      const noHint = (r: Result, pattern: RegExp) => {
        oneLine(r, 1, pattern)
        expect(r.stderr).not.toContain("leasehold migrate")
      }
      noHint(
        await run(["jobs", "stats", "--database-url", changed(PG_URL, (u) => void (u.port = "1"))]),
        /cannot connect to the database .*ECONNREFUSED/
      )
      if (target.name === "sqlite") return
      const url = (change: (u: URL) => void) => changed(target.url, change)
      const noDatabase = url((u) => void (u.pathname = "/nosuchdb"))
      noHint(
        await run(["jobs", "stats", "--database-url", noDatabase]),
        /cannot connect to the database .*(database "nosuchdb" does not exist|Unknown database 'nosuchdb')/
      )
      // PostgreSQL here trusts local connections (any password): an unknown role is its refusal.
      const badLogin = target.name === "postgres"
        ? url((u) => void (u.username = "nosuchuser"))
        : url((u) => void (u.password = "wrong"))
      noHint(
        await run(["jobs", "stats", "--database-url", badLogin]),
        /cannot connect to the database .*(role "nosuchuser" does not exist|Access denied)/
      )
    })

    onlyWhere(target.name !== "sqlite")(
      "worker: no such database, a refused login or an unknown host fail at once with one line; a refused connection is waited for",
      async () => {
        const url = (change: (u: URL) => void) => changed(target.url, change)
        const worker = (databaseUrl: string) =>
          run(["worker", "--database-url", databaseUrl, "--prefix", target.prefix, "--host", "w-permanent"])
        const permanent = [
          url((u) => void (u.pathname = "/nosuchdb")),
          target.name === "postgres"
            ? url((u) => void (u.username = "nosuchuser"))
            : url((u) => void (u.password = "wrong"))
        ]
        // Only where the resolver says "no such host" (ENOTFOUND); without a resolver it is
        // EAI_AGAIN, which may heal and is waited for.
        const host = await lookup("nosuchhost.invalid").then(() => "resolves", (e: { code?: string }) => e.code)
        if (host === "ENOTFOUND") permanent.push(url((u) => void (u.hostname = "nosuchhost.invalid")))
        for (const databaseUrl of permanent) {
          const r = await worker(databaseUrl)
          oneLine(r, 1, /^leasehold: cannot connect to the database \(/)
          expect(r.stderr).not.toMatch(/retrying|attempt/)
        }
        // A refused connection can heal (a server restarting): logged and retried until stopped
        // (here by what SIGTERM does to the binary; the SIGTERM test below sends the real one).
        const stop = new AbortController()
        let stderr = ""
        let ended = false
        const running = run(["worker", "--database-url", url((u) => void (u.port = "1")), "--prefix", target.prefix], {
          signal: stop.signal,
          onStderr: (text) => void (stderr += text)
        }).finally(() => void (ended = true))
        for (let i = 0; i < 300 && !/attempt 2: .*retrying in/.test(stderr); i++) await sleep(100)
        expect(ended).toBe(false)
        expect(stderr).toMatch(/cannot connect to the database .*attempt 1: .*ECONNREFUSED.*; retrying in/)
        stop.abort()
        expect((await running).code).toBe(0)
      },
      60_000
    )

    it("worker runs jobs; SIGTERM lets the running job finish within the grace period", async () => {
      const dead = await json("enqueue", "Broken", "{}")
      const release = join(dir, `release-${target.name}`)
      const slow = await json("enqueue", "Slow", JSON.stringify({ release }))
      const child = spawn(process.execPath, [
        BIN,
        "worker",
        "--prefix",
        target.prefix,
        "--poll-interval",
        "100 millis",
        "--grace-period",
        "20 seconds",
        "--host",
        "cli-worker",
        "--host-cap",
        "5",
        // JSON log lines (item 9)
        "--json"
      ], { env })
      let stderr = ""
      child.stderr.on("data", (d) => (stderr += String(d)))
      const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
      // wait until the slow job is running (asked of the database directly: quicker than the CLI)
      for (let i = 0; i < 600 && (await statusOf(slow.id)) !== "processing"; i++) {
        await new Promise((r) => setTimeout(r, 100))
      }
      expect(await statusOf(slow.id)).toBe("processing")
      // jobs show: the running attempt (number, claimed when, by which host) beside its claim
      const running = (await cli("jobs", "show", slow.id)).stdout
      expect(running).toMatch(/^claimedBy +cli-worker$/m)
      expect(running).toMatch(
        /attempts \(last 1\):\nattempt +startedAt +endedAt +outcome +host +error\n[- ]+\n1 +\d{4}-\d\d-\d\dT[\d:.]+Z +- +running +cli-worker +-\n$/
      )
      // jobs why: the same attempt in one sentence, with the lease it holds
      expect((await cli("jobs", "why", slow.id)).stdout).toMatch(
        /^running: claimed by host cli-worker at \d{4}-\d\d-\d\dT[\d:.]+Z \([^)]+\), attempt 1, holding lease key:slow\n$/
      )
      const leases = await json("leases", "list")
      expect(leases.map((l: { name: string; host: string }) => [l.name, l.host])).toEqual([["key:slow", "cli-worker"]])
      expect(leases[0]).toMatchObject({ acquiredAt: expect.stringMatching(ISO), expiresAt: expect.stringMatching(ISO) })
      // status --json: numbers, null and ISO-8601 times (item 11)
      const status = await json("status")
      expect(status.hosts.find((h: { host: string }) => h.host === "cli-worker")).toEqual({
        host: "cli-worker",
        state: "up",
        running: 1,
        cap: 5,
        draining: false,
        drainUntil: null,
        lastSeenAt: expect.stringMatching(ISO),
        startedAt: expect.stringMatching(ISO),
        version: null
      })
      // the worker registered the module's schedule (docs/behaviour.md §14)
      let schedules: ReadonlyArray<Record<string, unknown>> = []
      for (let i = 0; i < 100 && schedules.length === 0; i++) {
        schedules = await json("schedules")
        if (schedules.length === 0) await new Promise((r) => setTimeout(r, 100))
      }
      expect(schedules).toEqual([{
        name: "Yearly",
        cron: "0 0 1 1 *",
        timeZone: "UTC",
        catchUp: "once",
        lastSlot: null,
        nextSlot: expect.stringMatching(/^\d{4}-01-01T00:00:00\.000Z$/),
        createdAt: expect.stringMatching(ISO),
        updatedAt: expect.stringMatching(ISO)
      }])
      expect((await cli("schedules")).stdout).toMatch(
        /name\s+cron\s+timeZone\s+catchUp\s+lastSlot\s+nextSlot\n[- ]+\nYearly\s+0 0 1 1 \*\s+UTC\s+once\s+-\s+\d{4}-01-01T00:00:00\.000Z \(in \d+h\)/
      )
      failsCleanly(await cli("leases", "clear", "key:slow"), /is live .*use --force/)
      child.kill("SIGTERM")
      // the worker stops claiming but lets the running job finish: release it
      await new Promise((r) => setTimeout(r, 300))
      expect(await statusOf(slow.id)).toBe("processing")
      writeFileSync(release, "")
      expect(await exited).toBe(0)
      expect(stderr).not.toMatch(/\n\s+at /)
      // --json: every log line is a JSON object, the banner one of them
      const lines = stderr.trim().split("\n").map((line) => JSON.parse(line) as { message: string })
      expect(lines.map((l) => l.message)).toContain("worker started")
      const rows = await json("jobs", "list", "--limit", "100")
      expect(rows.find((r: { id: string }) => r.id === slow.id)).toMatchObject({
        status: "completed",
        completedAt: expect.stringMatching(ISO)
      })
      expect(rows.find((r: { id: string }) => r.id === dead.id)).toMatchObject({
        status: "failed",
        lastError: expect.stringContaining("broken on purpose")
      })
      expect(await json("leases", "list")).toEqual([])
      // its attempts: jobs show (JSON with ISO-8601 times; a table after the fields)
      const shown = await json("jobs", "show", dead.id)
      expect(shown).toMatchObject({ id: dead.id, status: "failed" })
      expect(shown.history.at(-1)).toEqual({
        attempt: shown.attempts,
        startedAt: expect.stringMatching(ISO),
        endedAt: expect.stringMatching(ISO),
        outcome: "dead",
        error: expect.stringContaining("broken on purpose"),
        host: "cli-worker"
      })
      const page = await cli("jobs", "show", dead.id)
      expect(page.stdout).toMatch(/^id +[0-9a-f-]+\n/)
      expect(page.stdout).toMatch(/attempts \(last \d+\):\nattempt +startedAt +endedAt +outcome +host +error\n/)
      // dead jobs by filter: nothing matches, then one by name; a bare discard is refused
      expect(await json("jobs", "retry", "--status", "interrupted")).toEqual({ retried: 0 })
      oneLine(await cli("jobs", "discard"), 1, /give a job id, a filter .* or --all/)
      expect(await json("jobs", "retry", "--name", "Broken", "--older-than", "0")).toEqual({ retried: 1 })
      // pending again, its row still naming its last attempt's host: not shown as a claim
      expect((await query(`SELECT claimed_by FROM ${target.prefix}jobs WHERE id = '${dead.id}'`))[0]?.claimed_by)
        .toBe("cli-worker")
      const pending = (await cli("jobs", "show", dead.id)).stdout
      expect(pending).toMatch(/^status +pending$/m)
      expect(pending).toMatch(/^claimedBy +-$/m)
      expect(pending).toMatch(/^1 +\S+ +\S+ +dead +cli-worker +.*broken on purpose/m)
      expect((await cli("jobs", "list", "--name", "Broken")).stdout).not.toContain("cli-worker")
      failsCleanly(await cli("jobs", "discard", dead.id), /no failed, interrupted or cancelled job/)
      expect(await json("jobs", "discard", "--all")).toEqual({ discarded: 0 })
      expect(await json("jobs", "purge", "--older-than", "0")).toEqual({ purged: expect.any(Number) })
    }, 180_000)

    it("jobs cancel: one job by id or the unfinished jobs a filter matches; a finished job, an unknown id or a bad filter is one error line", async () => {
      const one = await json("enqueue", "Greet", JSON.stringify({ name: "cancel me" }))
      expect(await json("jobs", "cancel", one.id)).toEqual({ id: one.id, status: "cancelled", wasRunning: false })
      expect(await statusOf(one.id)).toBe("cancelled")
      oneLine(await cli("jobs", "cancel", one.id), 1, /is cancelled: only a pending or processing job can be cancelled/)
      // cancelled by mistake: retried by id
      expect(await json("jobs", "retry", one.id)).toEqual({ id: one.id, status: "pending" })
      expect(await json("jobs", "cancel", one.id)).toEqual({ id: one.id, status: "cancelled", wasRunning: false })
      oneLine(await cli("jobs", "cancel", "no-such-job"), 1, /no job with id no-such-job/)
      // the command's own options, named once each
      const bare = await cli("jobs", "cancel")
      oneLine(bare, 1, /^leasehold: give a job id, or at least one of --name, --queue, --status\n$/)
      expect(bare.stderr).not.toMatch(/\b(\w+) \1\b/)
      oneLine(await cli("jobs", "cancel", one.id, "--queue", "q"), 1, /a job id or --name\/--queue\/--status, not both/)
      expect((await cli("jobs", "cancel", "--status", "completed")).code).toBe(2)
      const a = await json("enqueue", "Greet", JSON.stringify({ name: "a" }), "--queue", "cancel-q")
      const b = await json("enqueue", "Greet", JSON.stringify({ name: "b" }), "--queue", "cancel-q")
      expect((await cli("jobs", "cancel", "--queue", "cancel-q", "--name", "Greet", "--status", "pending")).stdout)
        .toBe("cancelled 2 job(s)\n")
      expect([await statusOf(a.id), await statusOf(b.id)]).toEqual(["cancelled", "cancelled"])
      expect((await cli("jobs", "retry", "--status", "cancelled", "--queue", "cancel-q")).stdout)
        .toBe("2 job(s) pending again\n")
      expect(await json("jobs", "cancel", "--queue", "cancel-q")).toEqual({ cancelled: 2 })
      expect(await json("jobs", "discard", "--status", "cancelled", "--queue", "cancel-q")).toEqual({ discarded: 2 })
      expect(await statusOf(a.id)).toBeUndefined()
      expect(await json("jobs", "cancel", "--queue", "cancel-q")).toEqual({ cancelled: 0 })
      expect(await json("jobs", "purge", "--status", "cancelled", "--older-than", "0")).toEqual({
        purged: expect.any(Number)
      })
    })

    it("jobs why: one sentence (--json: the reason with ISO-8601 times); an unknown id or SQL text is one error line", async () => {
      const later = await json("enqueue", "Greet", JSON.stringify({ name: "later" }), "--delay", "1 hour")
      const text = await cli("jobs", "why", later.id)
      expect(text).toMatchObject({ code: 0, stderr: "" })
      expect(text.stdout).toMatch(/^not due until \d{4}-\d\d-\d\dT[\d:.]+Z \(in (59m \d+s|1h)\)\n$/)
      // LEASEHOLD_JOBS names the fixture module: its types are registered
      const explained = await json("jobs", "why", later.id)
      expect(explained).toEqual({
        id: later.id,
        name: "Greet",
        queue: "default",
        status: "pending",
        at: expect.stringMatching(ISO),
        registered: true,
        reason: { _tag: "NotDue", runAt: expect.stringMatching(ISO) },
        message: expect.stringMatching(/^not due until /)
      })
      // without a job module the answer is the same, the type unknown here
      expect(
        await parsed(run(["jobs", "why", later.id, "--json", "--prefix", target.prefix], {
          env: { LEASEHOLD_JOBS: undefined }
        }))
      ).toMatchObject({ registered: false, reason: { _tag: "NotDue" } })
      expect(await json("jobs", "cancel", later.id)).toMatchObject({ status: "cancelled" })
      expect((await cli("jobs", "why", later.id)).stdout).toMatch(/^cancelled at \d{4}-[^ ]+Z \([^)]+\)\n$/)
      for (const bad of ["00000000-0000-0000-0000-000000000000", "'; DROP TABLE jobs; --", "x".repeat(40)]) {
        oneLine(await cli("jobs", "why", bad), 1, new RegExp(`no job with id ${bad.replace(/[-;']/g, ".")}`))
      }
      expect(await statusOf(later.id)).toBe("cancelled")
      oneLine(await cli("jobs", "why", later.id, "--jobs", join(dir, "none.mjs")), 1, /job module .* not found/)
    })

    it("worker --retention-…: how long finished jobs are kept, or never; --no-retention deletes nothing", async () => {
      // Tables of their own: the passes below delete old rows, which other tests' jobs must not be.
      const prefix = `${target.prefix}keep_`
      const own = (...args: Array<string>) => run([...args, "--prefix", prefix])
      expect((await own("migrate")).code).toBe(0)
      const enqueued = async (name: string, payload: object) =>
        JSON.parse((await own("enqueue", name, JSON.stringify(payload), "--json")).stdout).id as string
      const status = async (id: string) =>
        (await query(`SELECT status FROM ${prefix}jobs WHERE id = '${id}'`))[0]?.status as string | undefined
      // A worker until `done` (asked every 100 ms, at most 30 s), then stopped; what it wrote on stderr.
      const work = async (extra: ReadonlyArray<string>, done: (stderr: string) => Promise<boolean>) => {
        const stop = new AbortController()
        let stderr = ""
        const running = run(["worker", "--prefix", prefix, "--poll-interval", "100 millis", ...extra], {
          signal: stop.signal,
          onStderr: (text) => void (stderr += text)
        })
        for (let i = 0; i < 300 && !(await done(stderr)); i++) await sleep(100)
        stop.abort()
        expect((await running).code).toBe(0)
        return stderr
      }
      const DAY = 86_400_000
      const done = await enqueued("Greet", { name: "kept a while" })
      const dead = await enqueued("Broken", {})
      await work(
        ["--no-retention"],
        async () => (await status(done)) === "completed" && (await status(dead)) === "failed"
      )
      // Finished 5 and 40 days ago: past the default for dead jobs (30 days), not for completed (7).
      await query(`UPDATE ${prefix}jobs SET completed_at = completed_at - ${5 * DAY} WHERE id = '${done}'`)
      await query(`UPDATE ${prefix}jobs SET failed_at = failed_at - ${40 * DAY} WHERE id = '${dead}'`)
      const fresh = await enqueued("Greet", { name: "fresh" })
      await work(["--no-retention"], async () => (await status(fresh)) === "completed")
      expect([await status(done), await status(dead)]).toEqual(["completed", "failed"])
      // Completed jobs a day, dead ones for ever: the old completed job goes, the dead one stays.
      const log = await work(
        [
          "--retention-completed",
          "1 day",
          "--retention-dead",
          "never",
          "--retention-hosts",
          "never",
          "--retention-lost-leases",
          "never"
        ],
        async (stderr) => stderr.includes("retention: deleted")
      )
      expect(log).toContain(
        "retention: deleted 1 completed job(s), 0 dead job(s), 0 host row(s), 0 lost-lease record(s)"
      )
      expect([await status(done), await status(dead), await status(fresh)]).toEqual([undefined, "failed", "completed"])
      oneLine(
        await own("worker", "--no-retention", "--retention-dead", "1 day"),
        1,
        /--no-retention or --retention-…, not both/
      )
    }, 180_000)

    it(
      "worker: a job still running when the grace period ends is handed back (pending, attempt given back, lease released)",
      async () => {
        // Released by no one: it runs until the worker interrupts it.
        const stuck = await json("enqueue", "Slow", JSON.stringify({ release: join(dir, `never-${target.name}`) }))
        const stop = new AbortController()
        const running = run(
          ["worker", "--prefix", target.prefix, "--poll-interval", "100 millis", "--grace-period", "200 millis"],
          { signal: stop.signal }
        )
        for (let i = 0; i < 300 && (await statusOf(stuck.id)) !== "processing"; i++) await sleep(100)
        expect(await json("leases", "list")).toMatchObject([{ name: "key:slow" }])
        stop.abort()
        expect((await running).code).toBe(0)
        expect(await json("jobs", "show", stuck.id)).toMatchObject({ status: "pending", attempts: 0, history: [] })
        expect(await json("leases", "list")).toEqual([])
        expect(await json("jobs", "cancel", stuck.id)).toMatchObject({ status: "cancelled" })
      },
      60_000
    )

    it("drain, resume and status: JSON with booleans, null and ISO-8601 times; the table stays friendly", async () => {
      await json("drain", "--host", "h1", "--expires-in", "1 hour")
      const h1 = (await json("status")).hosts.find((h: { host: string }) => h.host === "h1")
      expect(h1).toMatchObject({
        state: "draining",
        draining: true,
        drainUntil: expect.stringMatching(ISO),
        cap: null,
        running: 0
      })
      expect(h1.lastSeenAt).toMatch(ISO)
      await json("resume", "--host", "h1")
      expect((await json("status")).hosts.find((h: { host: string }) => h.host === "h1")).toMatchObject({
        state: "up",
        draining: false,
        drainUntil: null
      })
      // a host that stopped refreshing its row (last seen 10 minutes ago) is gone, not running
      const seen = Date.now() - 600_000
      await query(
        `INSERT INTO ${target.prefix}hosts (host, last_seen_at, started_at, running, max_concurrent, draining) ` +
          `VALUES ('h-gone', ${seen}, ${seen}, 0, 0, 0)`
      )
      expect((await json("status")).hosts.find((h: { host: string }) => h.host === "h-gone")).toMatchObject({
        state: "gone"
      })
      const table = (await cli("status")).stdout
      expect(table).toMatch(/host\s+state\s+running\s+cap\s+draining\s+lastSeen/)
      expect(table).toMatch(/^h1\s+up\s+0\s+-\s+no\s+\d+s ago/m)
      expect(table).toMatch(/^h-gone\s+gone\s+0\s+-\s+no\s+10m ago/m)
    })

    it("limits set, list and clear: JSON rows with ISO-8601 times, a friendly table; bad input is one error line", async () => {
      expect(await json("limits", "set", "--type", "Greet", "--concurrency", "3", "--rate", "100/1m")).toMatchObject({
        scope: "type",
        target: "Greet",
        concurrency: 3,
        rateLimit: 100,
        ratePeriodMs: 60_000,
        paused: false,
        updatedAt: expect.stringMatching(ISO)
      })
      expect(await json("limits", "set", "--queue", "mail", "--pause", "--by", "ops")).toMatchObject({
        scope: "queue",
        paused: true,
        pausedBy: "ops",
        pausedAt: expect.stringMatching(ISO)
      })
      expect(await json("limits", "set", "--type", "Greet", "--unset", "rate")).toMatchObject({
        concurrency: 3,
        rateLimit: null
      })
      expect((await json("limits", "list")).map((r: { scope: string; target: string }) => `${r.scope}:${r.target}`))
        .toEqual(["queue:mail", "type:Greet"])
      const table = (await cli("limits", "list")).stdout
      expect(table).toMatch(/scope\s+target\s+concurrency\s+typeCap\s+rate\s+paused/)
      expect(table).toMatch(/^queue\s+mail\s+-\s+-\s+-\s+yes \(ops\)/m)
      expect(await json("limits", "clear", "--queue", "mail")).toEqual({ cleared: true })
      expect(await json("limits", "clear", "--queue", "mail")).toEqual({ cleared: false })
      oneLine(await cli("limits", "set", "--concurrency", "2"), 1, /exactly one of --type, --queue or --key/)
      oneLine(await cli("limits", "set", "--key", "k", "--type-cap", "2"), 1, /a type cap is set on a job type/)
      oneLine(await cli("limits", "set", "--type", "Greet", "--rate", "lots"), 1, /--rate must be N\/period/)
      oneLine(await cli("limits", "set", "--type", "Greet", "--pause", "--resume"), 1, /not both/)
      expect((await json("limits", "list")).length).toBe(1)
    })

    it("migrate unlock refuses a live lock once: one line on stderr, nothing on stdout", async () => {
      const now = Date.now()
      await query(
        `INSERT INTO ${target.prefix}migration_locks (lockname, lockowner, lockhost, acquiredat, expiresat) ` +
          `VALUES ('migrate', 'other-run', 'elsewhere', ${now}, ${now + 600_000})`
      )
      const status = await json("migrate", "status")
      expect(status.lock).toMatchObject({
        held: true,
        owner: "other-run",
        acquiredAt: new Date(now).toISOString(),
        expiresAt: new Date(now + 600_000).toISOString(),
        expiresInMs: expect.any(Number)
      })
      for (const args of [["migrate", "unlock"], ["migrate", "unlock", "--json"]]) {
        oneLine(
          await cli(...args),
          1,
          /^leasehold: the migration lock is live \(held by other-run on elsewhere\); not removed \(use --force\)\n$/
        )
      }
      // forced: removed, with the migrator's warning (a log line on stderr)
      const forced = await cli("migrate", "unlock", "--force", "--json")
      expect(forced.code).toBe(0)
      expect(JSON.parse(forced.stdout)).toMatchObject({ removed: true, lock: { owner: "other-run" } })
      expect(forced.stderr).toMatch(
        /^timestamp=\S+ level=WARN .*removed the migration lock held by other-run on elsewhere/
      )
      expect((await cli("migrate", "unlock")).stdout).toBe("migration lock is free\n")
    })

    it("tables fit the terminal (COLUMNS, or a terminal's width), cutting long cells with …; piped output is not cut", async () => {
      const queue = `q${"x".repeat(70)}`
      const r = await json("enqueue", "Greet", JSON.stringify({ name: "wide" }), "--queue", queue)
      const piped = (await cli("jobs", "list", "--queue", queue)).stdout
      expect(piped).toContain(queue)
      expect(piped).not.toContain("…")
      const columns = async (n: number) => {
        const listed = await run(["jobs", "list", "--queue", queue, "--prefix", target.prefix], {
          env: { COLUMNS: String(n) }
        })
        const lines = listed.stdout.trimEnd().split("\n")
        expect(lines).toHaveLength(3)
        for (const line of lines) expect(line.length).toBeLessThanOrEqual(n)
        expect(lines[2]).toContain("…")
        return lines[2]!
      }
      await columns(80)
      // wide enough for the whole id, which gives way last; the queue is cut
      expect(await columns(120)).toMatch(new RegExp(`^${r.id}  Greet  qx+…  pending `))
      // on a terminal 100 columns wide, with no COLUMNS: in this process…
      const inTerminal = (await run(["jobs", "list", "--queue", queue, "--prefix", target.prefix], { terminal: 100 }))
        .stdout.trimEnd().split("\n")
      expect(inTerminal).toHaveLength(3)
      for (const line of inTerminal) expect(line.length).toBeLessThanOrEqual(100)
      expect(inTerminal[2]).toContain("…")
      if (hasScript && target.name === "sqlite") {
        // …and on a real one, from bin.js
        const shell =
          `stty cols 100 rows 20; exec '${process.execPath}' '${BIN}' jobs list --queue ${queue} --prefix ${target.prefix}`
        const tty = await new Promise<string>((resolve) =>
          execFile("script", ["-qec", shell, "/dev/null"], { env, encoding: "utf8" }, (_e, stdout) => resolve(stdout))
        )
        const ttyLines = stripAnsi(tty).replace(/\r/g, "").trimEnd().split("\n")
        expect(ttyLines).toHaveLength(3)
        for (const line of ttyLines) expect(line.length).toBeLessThanOrEqual(100)
      }
      await json("jobs", "purge", "--older-than", "0", "--status", "completed")
      await query(`DELETE FROM ${target.prefix}jobs WHERE queue = '${queue}'`)
    })

    // What follows does not depend on the database: once, in the SQLite file.

    onlyWhere(target.name === "sqlite")(
      "a URL with an unknown scheme is refused with the accepted ones named, and creates nothing",
      async () => {
        const cwd = join(dir, "scheme")
        mkdirSync(cwd)
        for (const args of [["jobs", "stats"], ["migrate"], ["enqueue", "Greet", "{\"name\":\"x\"}"], ["worker"]]) {
          const r = await run([...args, "--database-url", "postgress://me:secret@db.example/app"], { cwd })
          oneLine(
            r,
            1,
            /^leasehold: --database-url: unknown scheme "postgress:\/\/" in postgress:\/\/me:\*\*\*@db\.example\/app; use postgres:\/\/, postgresql:\/\/, mysql:\/\/, mariadb:\/\/, sqlite:, file:, or a plain file path\n$/
          )
        }
        expect(readdirSync(cwd)).toEqual([])
      }
    )

    onlyWhere(target.name === "sqlite")(
      "a server URL without its :// or a bare word is refused with what to write instead, masked, and creates nothing",
      async () => {
        const cwd = join(dir, "typos")
        mkdirSync(cwd)
        const refused: ReadonlyArray<readonly [string, string]> = [
          [
            "postgres//me:secret@db.example/app",
            `--database-url: "postgres//…" is not a database URL (postgres needs "://"); did you mean postgres://me:***@db.example/app?`
          ],
          [
            "postgres:/db.example/app",
            `--database-url: "postgres:/…" is not a database URL (postgres needs "://"); did you mean postgres://db.example/app?`
          ],
          [
            "mysql:me:secret@db.example/app",
            `--database-url: "mysql:…" is not a database URL (mysql needs "://"); did you mean mysql://me:***@db.example/app?`
          ],
          [
            "newcomer",
            `--database-url: "newcomer" is neither a server URL (postgres://, mysql://, mariadb://) nor an SQLite file; ` +
            "to use an SQLite file, name it as a path or with sqlite: (./newcomer.db or sqlite:newcomer)"
          ]
        ]
        for (const [url, message] of refused) {
          for (const args of [["jobs", "stats"], ["migrate"], ["enqueue", "Greet", "{\"name\":\"x\"}"], ["worker"]]) {
            // from the environment as from the option
            const r = await run(args, { cwd, env: { LEASEHOLD_DATABASE_URL: url } })
            expect({ args, code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({
              args,
              code: 1,
              stdout: "",
              stderr: `leasehold: ${message}\n`
            })
          }
          expect(readdirSync(cwd)).toEqual([])
        }
        // what the line suggests, or any name that reads as a file, is an SQLite file
        for (const url of ["./newcomer.db", "sqlite:newcomer", "jobs.sqlite3"]) {
          expect((await run(["migrate"], { cwd, env: { LEASEHOLD_DATABASE_URL: url } })).code).toBe(0)
        }
        expect(readdirSync(cwd).sort()).toEqual(["jobs.sqlite3", "newcomer", "newcomer.db"])
      }
    )

    onlyWhere(target.name === "sqlite")(
      "a read-only command on a missing SQLite file says so and creates nothing; migrate creates it",
      async () => {
        const missing = join(dir, "missing", "nope.db")
        mkdirSync(join(dir, "missing"))
        const commands = [
          ["jobs", "list"],
          ["jobs", "stats"],
          ["jobs", "retry", "00000000-0000-0000-0000-000000000000"],
          ["jobs", "show", "00000000-0000-0000-0000-000000000000"],
          ["jobs", "discard", "--all"],
          ["jobs", "purge"],
          ["leases", "list"],
          ["leases", "clear", "x"],
          ["status"],
          ["drain", "--host", "h"],
          ["resume", "--host", "h"],
          ["migrate", "status"],
          ["migrate", "unlock"]
        ]
        for (const args of commands) {
          oneLine(
            await run(args, { env: { LEASEHOLD_DATABASE_URL: missing } }),
            1,
            /^leasehold: the SQLite database file .*nope\.db does not exist \(check --database-url or LEASEHOLD_DATABASE_URL; `leasehold migrate` creates it\)\n$/
          )
          expect(existsSync(missing)).toBe(false)
        }
        // a file that exists but was never migrated: the hint
        oneLine(
          await run(["enqueue", "Greet", "{\"name\":\"x\"}"], { env: { LEASEHOLD_DATABASE_URL: missing } }),
          1,
          /are missing \(no such table: leasehold_jobs\): run the migrations first, with `leasehold migrate` or Migrator\.make\(\)\.run from code\n$/
        )
        rmSync(missing)
        const migrated = await run(["migrate", "--json"], { env: { LEASEHOLD_DATABASE_URL: missing } })
        expect(migrated.code).toBe(0)
        expect(existsSync(missing)).toBe(true)
        // LEASEHOLD_PREFIX stands in for --prefix
        const stats = await run(["jobs", "stats", "--json"], {
          env: { LEASEHOLD_DATABASE_URL: missing, LEASEHOLD_PREFIX: "other_" }
        })
        expect(stats.stderr).toMatch(/no such table: other_jobs/)
      }
    )

    onlyWhere(target.name === "sqlite")("every option error names the option, in one line, exit 2", async () => {
      const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
        [["jobs", "list", "--limit", "abc"], "--limit: expected a whole number, got 'abc'"],
        [["jobs", "list", "--limit=1.5"], "--limit: expected a whole number, got '1.5'"],
        [["jobs", "list", "--limit", "-1"], "--limit: must be at least 0, got -1"],
        [["jobs", "list", "--limit"], "--limit: expected a value"],
        [
          ["jobs", "list", "--status", "nope"],
          "--status: expected one of pending, processing, completed, failed, interrupted, cancelled, got 'nope'"
        ],
        [
          ["jobs", "purge", "--status", "pending"],
          "--status: expected one of completed, failed, interrupted, cancelled, got 'pending'"
        ],
        [
          ["jobs", "discard", "--status", "completed"],
          "--status: expected one of failed, interrupted, cancelled, got 'completed'"
        ],
        [
          ["jobs", "purge", "--older-than", "soon"],
          "--older-than: not a duration: \"soon\" (try \"30 seconds\", \"7 days\")"
        ],
        [["worker", "--concurrency", "0"], "--concurrency: must be at least 1, got 0"],
        [["worker", "--log-format", "xml"], "--log-format: expected one of logfmt, json, pretty, got 'xml'"],
        [["worker", "--host-cap", "x"], "--host-cap: expected a whole number, got 'x'"],
        [["worker", "--poll-interval", "0"], "--poll-interval: must be above zero: \"0\""],
        [
          ["worker", "--retention-dead", "soon"],
          "--retention-dead: not a duration: \"soon\" (try \"30 seconds\", \"7 days\")"
        ],
        [["enqueue", "Greet", "--priority", "high"], "--priority: expected a whole number, got 'high'"],
        [["enqueue", "Greet", "--delay", "-5"], "--delay: must not be negative or NaN: \"-5\""],
        [["drain"], "--host: missing (this option is required)"],
        [
          ["jobs", "list", "--log-level", "loud"],
          "--log-level: expected one of all, trace, debug, info, warning, error, fatal, none, got 'loud'"
        ],
        [["jobs", "list", "--frob"], "unknown option --frob"]
      ]
      for (const [args, message] of cases) {
        const r = await run(args)
        expect({ args, code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({
          args,
          code: 2,
          stdout: "",
          stderr: `leasehold: ${message}\n`
        })
      }
      const noJobs = await run(["enqueue", "Greet"], { env: { LEASEHOLD_JOBS: undefined } })
      expect(noJobs.stderr).toBe("leasehold: --jobs: missing (name the job module with --jobs or LEASEHOLD_JOBS)\n")
      // through the binary once: exit code 2, as a shell sees it
      const spawnedUsage = await run(["jobs", "list", "--frob"], { spawned: true })
      expect({ code: spawnedUsage.code, stdout: spawnedUsage.stdout, stderr: spawnedUsage.stderr }).toEqual({
        code: 2,
        stdout: "",
        stderr: "leasehold: unknown option --frob\n"
      })
    })

    onlyWhere(target.name === "sqlite")(
      "a job module that throws as it is imported: one line naming it, exit 1",
      async () => {
        for (const command of ["enqueue", "worker"]) {
          const args = command === "enqueue" ? ["enqueue", "Greet"] : ["worker"]
          oneLine(
            await run([...args, "--jobs", THROWING_JOBS]),
            1,
            /^leasehold: cannot load job module .*throwing-jobs\.mjs: cannot read config\/jobs\.json\n$/
          )
          const r = await run([...args, "--jobs", FAILING_EFFECT_JOBS])
          oneLine(r, 1, /^leasehold: cannot load job module .*failing-effect-jobs\.mjs: MissingSecret\n$/)
          expect(r.stderr).not.toMatch(/FiberFailure|\bat /)
        }
        oneLine(await run(["enqueue", "Greet", "--jobs", join(dir, "nope.mjs")]), 1, /job module .*nope\.mjs not found/)
      }
    )

    onlyWhere(target.name === "sqlite")(
      "colour only on a terminal, never with NO_COLOR, always with FORCE_COLOR",
      async () => {
        const ESC = "\u001b["
        // the pages bin.js serves by itself (src/cli/fastHelp.ts), from bin.js
        const piped = await run(["--help"], { spawned: true })
        expect(piped.stdout).toContain("USAGE")
        expect(piped.stdout).not.toContain(ESC)
        expect((await run(["--help"], { env: { FORCE_COLOR: "1" }, spawned: true })).stdout).toContain(ESC)
        expect((await run(["jobs", "list", "--help"], { env: { FORCE_COLOR: "1" }, spawned: true })).stdout).toContain(
          ESC
        )
        expect((await run(["--frob"], { env: { FORCE_COLOR: "1" } })).stderr).toBe("leasehold: unknown option --frob\n")
        // on a terminal, in this process: the page bin.js serves, and the live CLI's own help
        // (src/cli/terminal.ts decides)…
        const inTerminal = async (extra: NodeJS.ProcessEnv) => {
          const runEnv = { ...env, TERM: "xterm", ...extra }
          const served = (await run(["jobs", "stats", "--help"], { env: runEnv, terminal: 80 })).stdout
          const live = await cliMain.runInProcess(["jobs", "stats", "--help"], {
            env: runEnv,
            terminal: { columns: 80 }
          })
          expect(stripAnsi(live.stdout)).toBe(stripAnsi(served))
          return [served, live.stdout]
        }
        for (const text of await inTerminal({})) expect(text).toContain(ESC)
        for (const text of await inTerminal({ NO_COLOR: "1" })) expect(text).not.toContain(ESC)
        expect((await run(["jobs", "stats", "--frob"], { env: { TERM: "xterm" }, terminal: 80 })).stderr).toBe(
          "leasehold: unknown option --frob\n"
        )
        // …and on a real one, from bin.js
        if (!hasScript) return
        const onTerminal = (extra: string) =>
          new Promise<string>((resolve) =>
            execFile(
              "script",
              ["-qec", `${extra} exec '${process.execPath}' '${BIN}' jobs stats --help`, "/dev/null"],
              { env: { ...env, TERM: "xterm" }, encoding: "utf8" },
              (_e, stdout) => resolve(stdout)
            )
          )
        expect(await onTerminal("")).toContain(ESC)
        expect(await onTerminal("NO_COLOR=1")).not.toContain(ESC)
      }
    )

    onlyWhere(target.name === "sqlite")(
      "help: truthful usage lines, each option's default and environment variable",
      async () => {
        const worker = (await run(["worker", "--help"])).stdout
        const usage = worker.split("\n").find((l) => l.startsWith("$ worker"))!
        expect(usage).toMatch(/ --jobs module /)
        expect(usage).not.toContain("[--jobs")
        expect(usage).toContain("[--queue queue...]")
        expect(usage).toContain("[--concurrency integer]")
        for (
          const text of [
            "Default: ./leasehold.db. Environment variable: LEASEHOLD_DATABASE_URL.",
            "Default: leasehold_. Environment variable: LEASEHOLD_PREFIX.",
            "Environment variable: LEASEHOLD_JOBS.",
            "Default: 4.",
            "Default: 0.",
            "Default: 1 second.",
            "Default: 30 seconds.",
            "Default: every queue."
          ]
        ) expect(worker.replace(/\s+/g, " ")).toContain(text)
        const enqueue = (await run(["enqueue", "--help"])).stdout
        expect(enqueue.split("\n").find((l) => l.startsWith("$ enqueue"))).toMatch(
          /--jobs module \[--many file\] \[--queue queue\] .*<job> \[<payload-json>\]/
        )
        const list = (await run(["jobs", "list", "--help"])).stdout.replace(/\s+/g, " ")
        expect(list).toContain("At most this many jobs. Default: 50.")
        const purge = (await run(["jobs", "purge", "--help"])).stdout.replace(/\s+/g, " ")
        expect(purge).toContain("Default: completed.")
        expect(purge).toContain("Default: 7 days.")
      }
    )

    onlyWhere(target.name === "sqlite")(
      "--log-level works for the worker, wherever it is on the command line",
      async () => {
        const quietJob = await json("enqueue", "Greet", JSON.stringify({ name: "quiet" }))
        // A worker until `done` (asked every 100 ms, at most 10 s), then stopped as SIGTERM stops
        // the binary; what it wrote on stderr.
        const work = async (extra: ReadonlyArray<string>, done: (stderr: string) => boolean | Promise<boolean>) => {
          const stop = new AbortController()
          let stderr = ""
          const running = run(["worker", "--prefix", target.prefix, "--poll-interval", "100 millis", ...extra], {
            signal: stop.signal,
            onStderr: (text) => void (stderr += text)
          })
          for (let i = 0; i < 100 && !(await done(stderr)); i++) await sleep(100)
          stop.abort()
          return (await running).stderr
        }
        // quiet from its start until after it ran the job (whose perform logs at info)
        const quiet = await work(["--log-level", "error"], async () => (await statusOf(quietJob.id)) === "completed")
        expect(quiet).toBe("")
        expect(await statusOf(quietJob.id)).toBe("completed")
        await json("enqueue", "Greet", JSON.stringify({ name: "loud" }))
        const loud = await work([], (stderr) => /hello loud|Ctrl-C to stop/.test(stderr))
        expect(loud).toMatch(/level=INFO/)
        expect(loud).toContain("Ctrl-C to stop")
      }
    )

    onlyWhere(target.name === "sqlite")(
      "worker --log-format: a line per finished attempt with its duration, as logfmt, JSON or pretty",
      async () => {
        const lineOf = async (format: string) => {
          const greeted = await json("enqueue", "Greet", JSON.stringify({ name: `by ${format}` }))
          const stop = new AbortController()
          let stderr = ""
          const running = run(
            ["worker", "--prefix", target.prefix, "--poll-interval", "100 millis", "--log-format", format],
            { signal: stop.signal, onStderr: (text) => void (stderr += text) }
          )
          for (let i = 0; i < 100 && !stderr.includes("attempt completed in"); i++) await sleep(100)
          stop.abort()
          expect((await running).code).toBe(0)
          expect(await statusOf(greeted.id)).toBe("completed")
          return stderr.split("\n").find((l) => l.includes("attempt completed in"))!
        }
        const logfmt = await lineOf("logfmt")
        expect(logfmt).toMatch(/level=INFO .*message="attempt completed in \d+ ms"/)
        for (
          const pair of [
            / jobName=Greet( |$)/,
            / queue=default( |$)/,
            / outcome=completed( |$)/,
            / durationMs=\d+( |$)/
          ]
        ) {
          expect(logfmt).toMatch(pair)
        }
        const parsed = JSON.parse(await lineOf("json")) as { logLevel: string; annotations: Record<string, unknown> }
        expect(parsed).toMatchObject({
          logLevel: "INFO",
          annotations: { jobName: "Greet", queue: "default", outcome: "completed", durationMs: expect.any(Number) }
        })
        expect(await lineOf("pretty")).toMatch(/INFO .*attempt completed in \d+ ms/)
      }
    )

    // npm exec (npx) does not pass SIGTERM on to what it runs: a worker it started notices its
    // launcher gone and stops as on SIGTERM. Through npm itself, killed as `kill -TERM` would, and
    // through a stand-in for npm (the same environment, the same `sh -c` between) killed outright,
    // which leaves the shell waiting for the worker.
    onlyWhere(target.name === "sqlite" && existsSync("/proc/self/stat"))(
      "worker: started by npm exec, it stops as on SIGTERM once npm is gone, within a few of its poll intervals",
      async () => {
        const POLL_MS = 100
        const args = [BIN, "worker", "--prefix", `${target.prefix}orphan_`, "--poll-interval", `${POLL_MS} millis`]
        const hasNpm = await new Promise<boolean>((resolve) =>
          execFile("npm", ["--version"], (e) => resolve(e === null))
        )
        // The stand-in: sh -c as npm runs a command (a second command keeps sh from replacing itself).
        const standIn =
          `require("node:child_process").spawn("sh", ["-c", '"$0" "$@"; exit $?', ...process.argv.slice(1)], { stdio: "inherit" }); setInterval(() => {}, 1e9)`
        const launchers = [
          ...(hasNpm
            ? [{ command: "npm", args: ["exec", "--", process.execPath, ...args], signal: "SIGTERM" as const }]
            : []),
          { command: process.execPath, args: ["-e", standIn, process.execPath, ...args], signal: "SIGKILL" as const }
        ]
        for (const launcher of launchers) {
          const child = spawn(launcher.command, launcher.args, {
            cwd: dir,
            env: { ...env, npm_command: "exec", npm_config_update_notifier: "false" },
            stdio: ["ignore", "ignore", "pipe"]
          })
          let stderr = ""
          child.stderr.on("data", (d) => (stderr += String(d)))
          let worker: number | undefined
          try {
            for (let i = 0; i < 600 && !stderr.includes("Ctrl-C to stop"); i++) await sleep(100)
            expect(stderr).toContain("Ctrl-C to stop")
            worker = descendants(child.pid!).find((p) => p.argv[1] === BIN)?.pid
            expect(worker, launcher.command).toBeDefined()
            child.kill(launcher.signal)
            let polls = 0
            while (polls < 50 && running(worker!)) {
              await sleep(POLL_MS)
              polls++
            }
            expect(running(worker!), `${launcher.command}: still running after ${polls} poll intervals`).toBe(false)
            expect(stderr).toMatch(
              /level=WARN .*the npm exec that started this worker is gone \(npm does not pass signals on\); stopping as on SIGTERM/
            )
            expect(stderr).toMatch(/level=INFO .*message="worker \S+ stopped"/)
          } finally {
            if (worker !== undefined && running(worker)) process.kill(worker, "SIGKILL")
            child.kill("SIGKILL")
          }
        }
      },
      120_000
    )

    onlyWhere(target.name === "sqlite")("worker --metrics-port serves Prometheus metrics while it runs", async () => {
      const greeted = await json("enqueue", "Greet", JSON.stringify({ name: "metered" }))
      const port = await new Promise<number>((resolve) => {
        const probe = createServer().listen(0, "127.0.0.1", () => {
          const { port } = probe.address() as AddressInfo
          probe.close(() => resolve(port))
        })
      })
      const stop = new AbortController()
      let stderr = ""
      const running = run(
        ["worker", "--prefix", target.prefix, "--poll-interval", "100 millis", "--metrics-port", String(port)],
        { signal: stop.signal, onStderr: (text) => void (stderr += text) }
      )
      for (let i = 0; i < 100 && (await statusOf(greeted.id)) !== "completed"; i++) await sleep(100)
      expect(stderr).toContain(`metrics at http://127.0.0.1:${port}/metrics`)
      const reply = await fetch(`http://127.0.0.1:${port}/metrics`)
      const scrape = parseScrape(await reply.text())
      stop.abort()
      expect((await running).code).toBe(0)
      expect(scrape.value("leasehold_jobs_completed_total", { job: "Greet", queue: "default" })).toBeGreaterThanOrEqual(
        1
      )
      expect(scrape.value("leasehold_store_up")).toBe(1)
      // the server is gone with the worker
      await expect(fetch(`http://127.0.0.1:${port}/metrics`)).rejects.toThrow()
    })

    // The `--help` pages bin.js serves without loading @effect/cli are the live CLI's own
    // output: scripts/help-pages.mjs (run by `npm run build`) writes them into src/cli/helpPages.ts;
    // here they are printed again and compared with that file (a difference: run the build), then
    // what bin.js prints, in colour or not, with what the live CLI prints.
    onlyWhere(target.name === "sqlite")("the --help pages are the live CLI's output, in colour or not", async () => {
      const paths = cliMain.commandPaths()
      expect(paths.map((p) => p.join(" "))).toEqual(expect.arrayContaining(["", "worker", "jobs", "jobs list"]))
      // The live CLI: dist/cli/main.js, without bin.js and its pages.
      const live = (args: ReadonlyArray<string>, extra: NodeJS.ProcessEnv) =>
        cliMain.runInProcess(args, { env: { ...env, ...extra } })
      const ordered = await helpPagesScript.helpPages()
      expect(Object.keys(ordered)).toEqual(paths.map((p) => p.join(" ")))
      expect(readFileSync(HELP_PAGES, "utf8"), "src/cli/helpPages.ts is out of date: run npm run build").toBe(
        helpPagesScript.helpPagesSource(ordered)
      )
      // What bin.js prints for each (src/cli/fastHelp.ts, which bin.js asks first; stdout a
      // pipe), so that no page falls through to the live CLI…
      for (const path of paths) {
        const page = ordered[path.join(" ")]!
        expect(await fastHelp([...path, "--help"], {}, { ...env, FORCE_COLOR: "1" })).toBe(page)
        expect(await fastHelp([...path, "-h"], {}, env)).toBe(stripAnsi(page))
      }
      // …and from bin.js itself, in a process of its own
      for (const path of [[], ["jobs", "list"]]) {
        const page = ordered[path.join(" ")]!
        expect((await run([...path, "--help"], { env: { FORCE_COLOR: "1" }, spawned: true })).stdout).toBe(page)
        expect((await run([...path, "-h"], { spawned: true })).stdout).toBe(stripAnsi(page))
      }
      expect((await live(["jobs", "--help"], {})).stdout).toBe(stripAnsi(ordered["jobs"]!))
    }, 180_000)

    // Once (the database plays no part): the plain-node CLI registers tsx for a TypeScript job
    // module, and the module's "leasehold" is the CLI's own (the fixture checks). Last, so no
    // other test's worker meets its job.
    onlyWhere(target.name === "sqlite")("a TypeScript job module is compiled through tsx when loaded", async () => {
      // in a process of its own: tsx registered by the CLI on plain node is the point (and its
      // hooks would stay registered in this process)
      const r = await spawnedJson(
        "enqueue",
        "GreetAll",
        JSON.stringify({ names: ["a", "b"] }),
        "--jobs",
        TYPESCRIPT_JOBS
      )
      expect(r.status).toBe("pending")
      const listed = await json("jobs", "list", "--limit", "100")
      expect(listed.find((j: { id: string }) => j.id === r.id)).toMatchObject({ name: "GreetAll", status: "pending" })
    })
  })
}
