/**
 * The Promise API's `logger` (src/runtime/logging.ts): every form — a minimum level, leasehold's
 * JSON writer, a pino-shaped object, a function — gets the lines of a completed attempt, a retry,
 * a deferral and a lost lease, each with the attempt's fields as fields of their own; "none"
 * writes nothing; a worker's own `logger` takes its lines from the client's. On an SQLite file
 * per run.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { createLeasehold, defineJob, type LogEntry, type LoggerOptions } from "../../src/promise.ts"

const dir = mkdtempSync(join(tmpdir(), "leasehold-logging-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

let failedOnce = false
let thief: ((lease: string) => Promise<unknown>) | undefined

const Plain = defineJob({ name: "Plain", perform: async () => {} })
const Flaky = defineJob({
  name: "Flaky",
  maxRetries: 1,
  backoff: { kind: "linear", baseSeconds: 0.05, maxSeconds: 0.05 },
  perform: async () => {
    if (!failedOnce) {
      failedOnce = true
      throw new Error("first attempt fails")
    }
  }
})
const Busy = defineJob({ name: "Busy", concurrencyKey: "busy", perform: async () => {} })
// Its lease is taken by another owner while it runs: its release finds it lost.
const Robbed = defineJob({
  name: "Robbed",
  concurrencyKey: "robbed",
  perform: async (_, job) => void (await thief!(job.lease!.name))
})

/** The four kinds of line, from one client whose `logger` (or its worker's) is `logger`. */
const scenario = async (logger: LoggerOptions | undefined, workerLogger?: LoggerOptions) => {
  failedOnce = false
  const lh = await createLeasehold({
    url: join(dir, `${Math.random().toString(36).slice(2)}.db`),
    jobs: [Plain, Flaky, Busy, Robbed],
    logger
  })
  try {
    await lh.migrate()
    const now = Date.now()
    await lh.transaction((tx) =>
      tx.query(
        "INSERT INTO leasehold_job_locks (lockname, lockowner, lockhost, acquiredat, expiresat) VALUES (?, ?, ?, ?, ?)",
        ["key:busy", "another", "elsewhere", now, now + 3_600_000]
      )
    )
    thief = (lease) =>
      lh.transaction((tx) => tx.query("UPDATE leasehold_job_locks SET lockowner = 'thief' WHERE lockname = ?", [lease]))
    const ids = await Promise.all([
      lh.enqueue(Plain, {}),
      lh.enqueue(Flaky, {}),
      lh.enqueue(Busy, {}),
      lh.enqueue(Robbed, {})
    ]).then((r) => r.map((x) => x.id))
    const worker = await lh.startWorker({ concurrency: 2, pollInterval: "20 millis", logger: workerLogger })
    const settled = async () => {
      const jobs = await Promise.all(ids.map((id) => lh.getJob(id)))
      const [plain, flaky, busy, robbed] = jobs
      return plain?.status === "completed" && flaky?.status === "completed" && busy?.attempts === 0 &&
        busy.lastError === null && robbed?.status === "completed" && (await worker.stats()).skipped > 0
    }
    for (let i = 0; i < 500 && !(await settled()); i++) await new Promise((r) => setTimeout(r, 10))
    expect(await settled()).toBe(true)
    await worker.stop()
    return ids
  } finally {
    await lh.close()
  }
}

/** The fields every attempt's line carries. */
const attemptFields = (jobId: string, jobName: string) => ({ jobId, jobName, attempt: expect.any(Number) })

/** Checks the four kinds of line among `entries`. */
const expectTheFour = (entries: ReadonlyArray<LogEntry>, [plain, flaky, busy, robbed]: ReadonlyArray<string>) => {
  const find = (level: string, text: RegExp, jobId: string) =>
    entries.find((e) => e.level === level && text.test(e.message) && e.annotations.jobId === jobId)
  expect(find("info", /^attempt completed in \d+ ms$/, plain!)?.annotations).toMatchObject({
    ...attemptFields(plain!, "Plain"),
    queue: "default",
    outcome: "completed",
    durationMs: expect.any(Number)
  })
  const retry = find("warning", /^attempt failed; retrying at /, flaky!)
  expect(retry?.annotations).toMatchObject(attemptFields(flaky!, "Flaky"))
  expect(String((retry?.cause as Error | undefined)?.message ?? retry?.message)).toMatch(/first attempt fails/)
  expect(find("info", /^attempt deferred, lease busy in \d+ ms$/, busy!)?.annotations).toMatchObject({
    ...attemptFields(busy!, "Busy"),
    outcome: "deferred, lease busy"
  })
  expect(find("warning", /^lease key:robbed was lost/, robbed!)?.annotations).toMatchObject(
    attemptFields(robbed!, "Robbed")
  )
}

describe("a Promise-API app's logger", () => {
  it("a function receives each line with its level, message, fields, cause and time", async () => {
    const entries: Array<LogEntry> = []
    const ids = await scenario({ to: (e) => entries.push(e) })
    expectTheFour(entries, ids)
    expect(entries.every((e) => e.time instanceof Date)).toBe(true)
  })

  it("a pino-shaped object gets the fields first and the message second, warn for warnings, err for a cause", async () => {
    const entries: Array<LogEntry> = []
    const method = (level: LogEntry["level"]) => (fields: Record<string, unknown>, message: string) => {
      const { err, ...annotations } = fields
      entries.push({ level, message, annotations, cause: err, time: new Date() })
    }
    const pino = { debug: method("debug"), info: method("info"), warn: method("warning"), error: method("error") }
    const ids = await scenario({ to: pino })
    expectTheFour(entries, ids)
  })

  it("JSON lines on stderr: one object per line, the fields at its top", async () => {
    const lines: Array<string> = []
    const write = process.stderr.write
    process.stderr.write =
      ((chunk: string) => (lines.push(...String(chunk).split("\n").filter(Boolean)), true)) as never
    let ids: ReadonlyArray<string>
    try {
      ids = await scenario({ format: "json", to: "stderr" })
    } finally {
      process.stderr.write = write
    }
    const entries = lines.map((l) => JSON.parse(l) as Record<string, unknown>).map((o): LogEntry => {
      const { cause, level, message, time, ...annotations } = o
      return {
        level: level as LogEntry["level"],
        message: String(message),
        annotations,
        cause,
        time: new Date(String(time))
      }
    })
    expectTheFour(entries, ids)
  })

  it("a minimum level: warning keeps the warnings and drops the attempts' info lines", async () => {
    const entries: Array<LogEntry> = []
    await scenario({ level: "warning", to: (e) => entries.push(e) })
    expect(entries.some((e) => e.level === "warning" && /^lease key:robbed was lost/.test(e.message))).toBe(true)
    expect(entries.filter((e) => e.level === "info" || e.level === "debug")).toEqual([])
  })

  it("none writes nothing, on either stream", async () => {
    const entries: Array<LogEntry> = []
    const written: Array<string> = []
    const [out, err] = [process.stdout.write, process.stderr.write]
    process.stdout.write = ((c: string) => (written.push(String(c)), true)) as never
    process.stderr.write = ((c: string) => (written.push(String(c)), true)) as never
    try {
      await scenario({ level: "none", to: (e) => entries.push(e) })
      await scenario({ level: "none" })
    } finally {
      process.stdout.write = out
      process.stderr.write = err
    }
    expect(entries).toEqual([])
    expect(written).toEqual([])
  })

  it("a worker's own logger takes its lines; the client's keeps the rest", async () => {
    const client: Array<LogEntry> = []
    const worker: Array<LogEntry> = []
    const ids = await scenario({ to: (e) => client.push(e) }, { to: (e) => worker.push(e) })
    expectTheFour(worker, ids)
    expect(client.some((e) => e.annotations.jobId !== undefined)).toBe(false)
  })

  it("bad logger options are a TypeError naming the problem, before anything connects", async () => {
    const url = join(dir, "never.db")
    await expect(createLeasehold({ url, jobs: [Plain], logger: { level: "loud" as never } })).rejects.toThrow(
      /^createLeasehold: logger.level must be one of debug, info, warning, error, none, got loud$/
    )
    await expect(createLeasehold({ url, jobs: [Plain], logger: { to: {} as never } })).rejects.toThrow(TypeError)
  })
})
