/**
 * The CLI end to end, as a spawned process, on SQLite, PostgreSQL and MariaDB: migrate,
 * enqueue, jobs, leases, drain/resume/status, bad input (one line on stderr, exit ≠ 0, no stack
 * trace), and a worker that finishes its running job when sent SIGTERM. The process is the
 * compiled CLI on plain node (dist/cli/bin.js), as installed; vitest's global setup
 * (test/support/build.ts) builds dist/ first.
 */
import { execFile, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import Sqlite from "better-sqlite3"
import mysql from "mysql2/promise"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { migrations } from "../../src/adapters/sql/schema.ts"
import { MYSQL_URL, PG_URL, uniquePrefix } from "./databases.ts"

const BIN = join(import.meta.dirname, "..", "..", "dist", "cli", "bin.js")
const JOBS = join(import.meta.dirname, "..", "fixtures", "jobs.mjs")
const TYPESCRIPT_JOBS = join(import.meta.dirname, "..", "fixtures", "typescript-jobs.ts")

/** A command slower than this is reported (not failed): the machines are shared and noisy. */
const SLOW_COMMAND_MS = 10_000

const dir = mkdtempSync(join(tmpdir(), "leasehold-cli-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

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

/** The CLI suite against one database; test/cli-*.test.ts run it (as separate files, in parallel). */
export const cliSuite = (targetName: "sqlite" | "postgres" | "mysql") => {
  const target = targetName === "sqlite"
    ? { name: "sqlite", url: join(dir, "cli.db"), prefix: "leasehold_" } as const
    : targetName === "postgres"
    ? { name: "postgres", url: PG_URL, prefix: uniquePrefix("cli") } as const
    : { name: "mysql", url: MYSQL_URL, prefix: uniquePrefix("cli") } as const
  describe(`leasehold CLI on ${target.name}`, { timeout: 120_000 }, () => {
    const env = { ...process.env, LEASEHOLD_DATABASE_URL: target.url, LEASEHOLD_JOBS: JOBS }
    // Asynchronous, so the test worker's event loop stays free while a command runs. A slow
    // command is reported on stderr rather than hidden.
    const run = (args: ReadonlyArray<string>) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const started = Date.now()
        execFile(
          process.execPath,
          [BIN, ...args],
          { env, encoding: "utf8", timeout: 60_000 },
          (error, stdout, stderr) => {
            const took = Date.now() - started
            if (took > SLOW_COMMAND_MS) {
              console.warn(
                `leasehold ${args.slice(0, 2).join(" ")} took ${(took / 1000).toFixed(1)} s (machine under load?)`
              )
            }
            resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, stdout, stderr })
          }
        )
      })
    const cli = (...args: Array<string>) => run([...args, "--prefix", target.prefix])
    const json = async (...args: Array<string>) => {
      const r = await cli(...args, "--json")
      expect(r.stderr).toBe("")
      expect(r.code).toBe(0)
      return JSON.parse(r.stdout)
    }
    const statusOf = async (id: string): Promise<string | undefined> => {
      const sql = `SELECT status FROM ${target.prefix}jobs WHERE id = '${id}'`
      if (target.name === "sqlite") {
        const db = new Sqlite(target.url, { readonly: true })
        try {
          return (db.prepare(sql).get() as { status: string } | undefined)?.status
        } finally {
          db.close()
        }
      }
      return (await serverQuery(target.name, sql))[0]?.status as string | undefined
    }
    const failsCleanly = (r: { code: number | null; stderr: string }, pattern: RegExp) => {
      expect(r.code).not.toBe(0)
      expect(r.stderr).toMatch(pattern)
      expect(r.stderr).not.toMatch(/\n\s+at /)
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
      const first = await json("migrate")
      expect(first.applied.map((m: { id: number }) => m.id)).toEqual(migrations.map((m) => m.id))
      expect((await json("migrate")).applied).toEqual([])
      const status = await json("migrate", "status")
      expect(status.pending).toEqual([])
      expect(status.lock.held).toBe(false)
      expect((await cli("migrate", "status")).stdout).toContain("lock: free")
    })

    it("enqueue, jobs list, stats, and the duplicate of a unique key", async () => {
      const a = await json("enqueue", "Greet", JSON.stringify({ name: "it's; -- ü" }), "--unique-key", "greet-1")
      expect(a.status).toBe("pending")
      expect(await json("enqueue", "Greet", JSON.stringify({ name: "x" }), "--unique-key", "greet-1")).toMatchObject({
        id: a.id,
        duplicate: true
      })
      const listed = await json("jobs", "list", "--status", "pending")
      expect(listed.map((r: { id: string }) => r.id)).toContain(a.id)
      expect(JSON.parse(listed.find((r: { id: string }) => r.id === a.id).payload)).toEqual({ name: "it's; -- ü" })
      expect(await json("jobs", "stats")).toContainEqual({ queue: "default", status: "pending", count: 1 })
      expect((await cli("jobs", "list")).stdout).toMatch(/id\s+name\s+queue\s+status/)
    })

    it("bad input: one line on stderr, a non-zero exit, no stack trace, nothing written", async () => {
      failsCleanly(await cli("enqueue", "Greet", "{not json"), /^leasehold: payload is not valid JSON/)
      failsCleanly(await cli("enqueue", "Greet", JSON.stringify({ nom: 1 })), /^leasehold: invalid payload for Greet/)
      failsCleanly(await cli("enqueue", "Nope", "{}"), /^leasehold: unknown job "Nope"; known: /)
      failsCleanly(
        await cli("enqueue", "Greet", JSON.stringify({ name: "x" }), "--unique-key", "k".repeat(256)),
        /uniqueKey/
      )
      failsCleanly(await cli("jobs", "purge", "--older-than", "soon"), /not a duration/)
      failsCleanly(await cli("leases", "clear", "no-such-lease"), /no lease named/)
      failsCleanly(await cli("jobs", "retry", "00000000-0000-0000-0000-000000000000"), /no failed or interrupted job/)
      expect((await cli("frobnicate")).code).not.toBe(0)
      failsCleanly(
        await run(["jobs", "stats", "--database-url", "postgres://postgres@127.0.0.1:1/none"]),
        /^leasehold: cannot connect to the database/
      )
      expect((await json("jobs", "stats")).reduce((n: number, c: { count: number }) => n + c.count, 0)).toBe(1)
    })

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
        "cli-worker"
      ], { env })
      let stderr = ""
      child.stderr.on("data", (d) => (stderr += String(d)))
      const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
      // wait until the slow job is running (asked of the database directly: quicker than the CLI)
      for (let i = 0; i < 600 && (await statusOf(slow.id)) !== "processing"; i++) {
        await new Promise((r) => setTimeout(r, 100))
      }
      expect(await statusOf(slow.id)).toBe("processing")
      expect((await json("leases", "list")).map((l: { name: string; host: string }) => [l.name, l.host])).toEqual([[
        "key:slow",
        "cli-worker"
      ]])
      failsCleanly(await cli("leases", "clear", "key:slow"), /is live .*use --force/)
      child.kill("SIGTERM")
      // the worker stops claiming but lets the running job finish: release it
      await new Promise((r) => setTimeout(r, 300))
      expect(await statusOf(slow.id)).toBe("processing")
      writeFileSync(release, "")
      expect(await exited).toBe(0)
      expect(stderr).not.toMatch(/\n\s+at /)
      const rows = await json("jobs", "list", "--limit", "100")
      expect(rows.find((r: { id: string }) => r.id === slow.id).status).toBe("completed")
      expect(rows.find((r: { id: string }) => r.id === dead.id)).toMatchObject({
        status: "failed",
        lastError: expect.stringContaining("broken on purpose")
      })
      expect(await json("leases", "list")).toEqual([])
      // a dead job can be retried; finished jobs purged
      expect(await json("jobs", "retry", dead.id)).toEqual({ id: dead.id, status: "pending" })
      expect(await json("jobs", "purge", "--older-than", "0")).toEqual({ purged: expect.any(Number) })
    }, 180_000)

    it("drain, resume and status", async () => {
      await json("drain", "--host", "h1", "--expires-in", "1 hour")
      const status = await json("status")
      expect(status.hosts.find((h: { host: string }) => h.host === "h1").draining).toMatch(/^until /)
      await json("resume", "--host", "h1")
      expect((await json("status")).hosts.find((h: { host: string }) => h.host === "h1").draining).toBe("no")
      expect((await cli("status")).stdout).toMatch(/host\s+running\s+cap\s+draining/)
    })

    // Once (the database plays no part): the plain-node CLI registers tsx for a TypeScript job
    // module, and the module's "leasehold" is the CLI's own (the fixture checks). Last, so no
    // other test's worker meets its job.
    it.runIf(target.name === "sqlite")("a TypeScript job module is compiled through tsx when loaded", async () => {
      const r = await json("enqueue", "GreetAll", JSON.stringify({ names: ["a", "b"] }), "--jobs", TYPESCRIPT_JOBS)
      expect(r.status).toBe("pending")
      const listed = await json("jobs", "list", "--limit", "100")
      expect(listed.find((j: { id: string }) => j.id === r.id)).toMatchObject({ name: "GreetAll", status: "pending" })
    })
  })
}
