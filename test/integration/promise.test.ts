/**
 * The Promise API (src/promise.ts) on SQLite, PostgreSQL (through the app's own pg Pool) and
 * MariaDB: migrate, enqueue, a worker that runs a Promise perform, a transaction that commits
 * or rolls back with the app's own SQL, errors as named Error subclasses, and a stop that lets
 * the running job finish. Each run uses a table prefix of its own and drops it afterwards.
 */
import { Schema } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { createLeasehold, defineJob, type LeaseholdClient } from "../../src/promise.ts"
import { MYSQL_URL, PG_URL, uniquePrefix } from "../support/databases.ts"

const dir = mkdtempSync(join(tmpdir(), "leasehold-promise-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Polls `check` every 20 ms until it holds (at most 20 s). */
const until = async (check: () => Promise<boolean>) => {
  for (let i = 0; i < 1000; i++) {
    if (await check()) return
    await new Promise((r) => setTimeout(r, 20))
  }
  throw new Error("condition not reached within 20 s")
}

type Target = {
  readonly name: string
  /** The client, its prefix, the app's own placeholder for one parameter, and how to clean up. */
  readonly open: (
    jobs: ReadonlyArray<ReturnType<typeof defineJob<any, any>>>
  ) => Promise<{ lh: LeaseholdClient; prefix: string; param: string; done: () => Promise<void> }>
}

const dropAll = async (lh: LeaseholdClient, prefix: string, quote: (t: string) => string) => {
  await lh.transaction(async (tx) => {
    for (
      const t of [
        "jobs",
        "hosts",
        "job_locks",
        "job_locks_tokens",
        "migrations",
        "migration_locks",
        "migration_locks_tokens",
        "schedules"
      ]
    ) {
      await tx.query(`DROP TABLE IF EXISTS ${quote(prefix + t)}`)
    }
  })
}

const targets: ReadonlyArray<Target> = [
  {
    name: "SQLite (url)",
    open: async (jobs) => {
      const prefix = uniquePrefix("pr")
      const lh = await createLeasehold({ url: join(dir, `${prefix}.db`), jobs, prefix })
      return { lh, prefix, param: "?", done: () => lh.close() }
    }
  },
  {
    name: "PostgreSQL (the app's pg Pool)",
    open: async (jobs) => {
      const prefix = uniquePrefix("pr")
      const pool = new pg.Pool({ connectionString: PG_URL, max: 5 })
      const lh = await createLeasehold({ pool, jobs, prefix })
      return {
        lh,
        prefix,
        param: "$1",
        done: async () => {
          await dropAll(lh, prefix, (t) => `"${t}"`)
          await lh.close()
          // The pool stays the app's: still usable after close, ended by the app.
          expect((await pool.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }])
          await pool.end()
        }
      }
    }
  },
  {
    name: "MariaDB (url)",
    open: async (jobs) => {
      const prefix = uniquePrefix("pr")
      const lh = await createLeasehold({ url: MYSQL_URL.replace(/^mysql:/, "mariadb:"), jobs, prefix })
      return {
        lh,
        prefix,
        param: "?",
        done: async () => {
          await dropAll(lh, prefix, (t) => `\`${t}\``)
          await lh.close()
        }
      }
    }
  }
]

describe.each(targets)("Promise API on $name", (target) => {
  it("migrates, enqueues, runs a Promise perform in a worker, and stops gracefully", { timeout: 60_000 }, async () => {
    const seen: Array<{ to: string; attempt: number }> = []
    let release: () => void = () => undefined
    const gate = new Promise<void>((r) => (release = r))
    const SendEmail = defineJob({
      name: "SendEmail",
      schema: Schema.Struct({ to: Schema.String }),
      perform: async ({ to }, job) => {
        await job.heartbeat()
        if (to === "slow@example.com") await gate
        seen.push({ to, attempt: job.attempt })
      }
    })
    const { lh, done } = await target.open([SendEmail])
    try {
      // Before migrate there are no tables; a statement that failed then must not stay failed
      // (SQLite's client caches failed statements: src/adapters/sqlite/client.ts).
      await expect(lh.enqueue(SendEmail, { to: "early@example.com" })).rejects.toMatchObject({ name: "SqlError" })
      expect((await lh.migrate()).applied.length).toBeGreaterThan(0)
      await new Promise((r) => setTimeout(r, 1100))
      expect((await lh.migrate()).applied).toEqual([])
      const early = await lh.enqueue(SendEmail, { to: "early@example.com" })
      const first = await lh.enqueue(SendEmail, { to: "a@example.com" })
      expect(first.status).toBe("pending")
      const worker = await lh.startWorker({ concurrency: 2, pollInterval: "50 millis" })
      await until(async () => (await lh.getJob(first.id))?.status === "completed")
      await until(async () => (await lh.getJob(early.id))?.status === "completed")
      expect(seen.map((s) => s.to).sort()).toEqual(["a@example.com", "early@example.com"])

      // stop() waits for the running job, which completes
      const slow = await lh.enqueue(SendEmail, { to: "slow@example.com" })
      await until(async () => (await lh.getJob(slow.id))?.status === "processing")
      const stopped = worker.stop()
      setTimeout(release, 200)
      await stopped
      expect((await lh.getJob(slow.id))?.status).toBe("completed")
      expect((await worker.stats()).processed).toBe(3)
    } finally {
      release()
      await done()
    }
  })

  it(
    "a defineJob schedule: the worker enqueues it at its slots and listSchedules shows it",
    { timeout: 60_000 },
    async () => {
      let runs = 0
      // every second, on the live clock (the slot rules run under the TestClock in test/conformance/schedules.ts)
      const Tick = defineJob({ name: "Tick", schedule: { cron: "* * * * * *" }, perform: () => void runs++ })
      const { lh, done } = await target.open([Tick])
      try {
        await lh.migrate()
        const worker = await lh.startWorker({ pollInterval: "50 millis" })
        await until(async () => runs >= 1)
        await worker.stop()
        const [row, ...others] = await lh.listSchedules()
        expect(others).toEqual([])
        expect(row).toMatchObject({ name: "Tick", cron: "* * * * * *", timeZone: "UTC", catchUp: "once" })
        const jobs = await lh.listJobs({ name: "Tick" })
        // run_at is the slot; the row's last slot is the latest one enqueued
        expect(jobs.map((j) => j.runAt)).toContain(row!.lastSlot)
        expect(jobs.every((j) => j.runAt % 1000 === 0)).toBe(true)
        expect(row!.nextSlot).toBe(row!.lastSlot! + 1000)
      } finally {
        await done()
      }
    }
  )

  it("rejects bad input with named Error subclasses and writes nothing", { timeout: 60_000 }, async () => {
    const Typed = defineJob({ name: "Typed", schema: Schema.Struct({ n: Schema.Number }), perform: () => undefined })
    const { lh, done } = await target.open([Typed])
    try {
      await lh.migrate()
      // @ts-expect-error: the payload's type is checked at compile time too
      const bad = await lh.enqueue(Typed, { n: "one" }).catch((e: unknown) => e)
      expect(bad).toBeInstanceOf(Error)
      expect(bad).toMatchObject({ name: "PayloadError", _tag: "PayloadError", jobName: "Typed" })
      const key = await lh.enqueue(Typed, { n: 1 }, { uniqueKey: "x".repeat(256) }).catch((e: unknown) => e)
      expect(key).toMatchObject({ name: "EnqueueInputError", field: "uniqueKey" })
      expect(await lh.listJobs()).toEqual([])
    } finally {
      await done()
    }
  })

  it(
    "enqueueMany writes many jobs, reports taken keys, joins a transaction, and rejects a bad payload writing nothing",
    {
      timeout: 60_000
    },
    async () => {
      const Item = defineJob({ name: "Item", schema: Schema.Struct({ sku: Schema.String }), perform: () => undefined })
      const { lh, done } = await target.open([Item])
      try {
        await lh.migrate()
        const items = Array.from({ length: 1_500 }, (_, i) => ({ sku: `sku-${i % 1_400}` }))
        const bad = await lh.enqueueMany(Item, [...items, { sku: 7 } as unknown as { sku: string }]).catch((
          e: unknown
        ) => e)
        expect(bad).toMatchObject({ name: "PayloadError", jobName: "Item" })
        expect(await lh.listJobs()).toEqual([])
        const result = await lh.enqueueMany(Item, items, { uniqueKey: (p) => p.sku, queue: "stock" })
        expect(result.inserted).toBe(1_400)
        expect(result.duplicates).toHaveLength(100)
        expect(result.duplicates[0]).toEqual({ index: 1_400, uniqueKey: "sku-0", id: result.jobs[0]!.id })
        const rolledBack = await lh.transaction(async (tx) => {
          await tx.enqueueMany(Item, [{ sku: "tx-1" }, { sku: "tx-2" }], { uniqueKey: (p) => p.sku })
          throw new Error("undo")
        }).catch((e: unknown) => e)
        expect(rolledBack).toMatchObject({ message: "undo" })
        expect(await lh.listJobs({ limit: 10_000 })).toHaveLength(1_400)
      } finally {
        await done()
      }
    }
  )

  it("dead jobs keep their attempts, and are retried or discarded by filter", { timeout: 60_000 }, async () => {
    const Doomed = defineJob<{ readonly n: number }>({
      name: "Doomed",
      maxRetries: 0,
      perform: ({ n }) => Promise.reject(new Error(`doomed ${n}`))
    })
    const { lh, done } = await target.open([Doomed])
    try {
      await lh.migrate()
      const jobs = await Promise.all([1, 2, 3].map((n) => lh.enqueue(Doomed, { n })))
      const worker = await lh.startWorker({ pollInterval: "50 millis" })
      for (const { id } of jobs) await until(async () => (await lh.getJob(id))?.status === "failed")
      await worker.stop()
      expect((await lh.getJob(jobs[0]!.id))?.history).toMatchObject([
        { attempt: 1, outcome: "dead", error: expect.stringContaining("doomed 1"), host: worker.host }
      ])
      await expect(lh.retryDead({ status: "pending" as "failed" })).rejects.toMatchObject({ name: "JobFilterError" })
      expect(await lh.retryDead({ ids: [jobs[0]!.id] })).toBe(1)
      expect((await lh.getJob(jobs[0]!.id))?.status).toBe("pending")
      expect(await lh.discardDead({ name: "Doomed" })).toBe(2)
      expect((await lh.listJobs()).map((j) => j.id)).toEqual([jobs[0]!.id])
    } finally {
      await done()
    }
  })

  it(
    "stop() hands back a job still running after the grace period: pending, its attempt given back, its key free at once",
    {
      timeout: 60_000
    },
    async () => {
      const attempts: Array<number> = []
      const leases: Array<{ readonly name: string; readonly fencingToken: bigint } | null> = []
      let stuck = true
      const Stuck = defineJob<{ readonly n: number }>({
        name: "Stuck",
        concurrencyKey: "stuck",
        perform: (_payload, job) => {
          attempts.push(job.attempt)
          leases.push(job.lease)
          // The first run waits until the worker's stop interrupts it (its signal aborts).
          if (!stuck) return
          return new Promise<void>((resolve) => job.signal.addEventListener("abort", () => resolve()))
        }
      })
      const { lh, done } = await target.open([Stuck])
      try {
        await lh.migrate()
        const { id } = await lh.enqueue(Stuck, { n: 1 })
        const before = await lh.getJob(id)
        const first = await lh.startWorker({ pollInterval: "50 millis", gracePeriod: "100 millis" })
        await until(async () => (await lh.getJob(id))?.status === "processing")
        await first.stop()
        expect(await lh.getJob(id)).toMatchObject({ status: "pending", attempts: 0, runAt: before!.runAt, history: [] })
        stuck = false
        // The key was released with the hand-back: the next worker runs the job at once, as attempt 1 again.
        const second = await lh.startWorker({ pollInterval: "50 millis" })
        await until(async () => (await lh.getJob(id))?.status === "completed")
        await second.stop()
        expect(attempts).toEqual([1, 1])
        // Each run sees its lease, the second acquisition with a greater fencing token.
        expect(leases.map((l) => l?.name)).toEqual(["key:stuck", "key:stuck"])
        expect(leases[1]!.fencingToken > leases[0]!.fencingToken).toBe(true)
      } finally {
        await done()
      }
    }
  )

  it("startWorker's retention deletes finished jobs as configured; a bad value rejects with WorkerConfigError", {
    timeout: 60_000
  }, async () => {
    const Fine = defineJob<{ readonly n: number }>({ name: "Fine", perform: () => undefined })
    const Doomed = defineJob<{ readonly n: number }>({
      name: "Doomed",
      maxRetries: 0,
      perform: () => Promise.reject(new Error("doomed"))
    })
    const { lh, done } = await target.open([Fine, Doomed])
    try {
      await lh.migrate()
      await expect(lh.startWorker({ retention: { batchSize: 0 } })).rejects.toMatchObject({
        name: "WorkerConfigError"
      })
      const fine = await lh.enqueue(Fine, { n: 1 })
      const doomed = await lh.enqueue(Doomed, { n: 2 })
      // Completed jobs kept no time at all, dead ones for ever; a pass every 100 ms.
      const worker = await lh.startWorker({
        pollInterval: "50 millis",
        retention: { completed: 0, dead: false, interval: "100 millis" }
      })
      await until(async () => (await lh.getJob(fine.id)) === undefined)
      await until(async () => (await lh.getJob(doomed.id))?.status === "failed")
      await worker.stop()
      expect((await lh.listJobs()).map((j) => j.id)).toEqual([doomed.id])
    } finally {
      await done()
    }
  })

  it("limits: a paused type holds its jobs while a worker runs, resumed they run; a bad change is LimitInputError", {
    timeout: 60_000
  }, async () => {
    const ran: Array<number> = []
    const Held = defineJob<{ readonly n: number }>({
      name: "Held",
      perform: async ({ n }) => {
        ran.push(n)
      }
    })
    const { lh, done } = await target.open([Held])
    try {
      await lh.migrate()
      expect(await lh.limits.pause({ type: "Held" }, "ops")).toMatchObject({ paused: true, pausedBy: "ops" })
      const worker = await lh.startWorker({ concurrency: 1, pollInterval: "50 millis" })
      const job = await lh.enqueue(Held, { n: 1 })
      await until(async () => (await lh.getJob(job.id))?.leaseName === "paused:type:Held")
      expect(ran).toEqual([])
      expect((await lh.explain(job.id)).reason).toMatchObject({ _tag: "Paused" })
      await lh.limits.resume({ type: "Held" })
      await until(async () => ran.length === 1)
      await worker.stop()
      expect(await lh.limits.list()).toMatchObject([{ scope: "type", target: "Held", paused: false }])
      expect(await lh.limits.clear({ type: "Held" })).toBe(true)
      await expect(lh.limits.set({ type: "Held", concurrency: 0 })).rejects.toMatchObject({ name: "LimitInputError" })
      expect(await lh.limits.list()).toEqual([])
    } finally {
      await done()
    }
  })

  it("cancels: a pending job never runs, a running one's heartbeat rejects with JobCancelled; errors are named", {
    timeout: 60_000
  }, async () => {
    let release: () => void = () => undefined
    const gate = new Promise<void>((r) => (release = r))
    let started = false
    const heartbeats: Array<string> = []
    const Long = defineJob<{ readonly n: number }>({
      name: "Long",
      perform: async (_payload, job) => {
        started = true
        await gate
        await job.heartbeat().catch((e: { name: string }) => {
          heartbeats.push(e.name)
          throw e
        })
      }
    })
    const { lh, done } = await target.open([Long])
    try {
      await lh.migrate()
      const pending = await lh.enqueue(Long, { n: 1 }, { delay: "1 hour" })
      // why it waits, in Job.explain's words; an unknown id is named like cancel's
      expect(await lh.explain(pending.id)).toMatchObject({
        id: pending.id,
        registered: true,
        reason: { _tag: "NotDue" },
        message: expect.stringMatching(/^not due until \S+Z \(in (59m \d+s|1h)\)$/)
      })
      await expect(lh.explain("nope")).rejects.toMatchObject({ name: "JobNotFoundError" })
      expect(await lh.cancel(pending.id)).toEqual({ id: pending.id, status: "cancelled", wasRunning: false })
      expect((await lh.explain(pending.id)).reason).toMatchObject({ _tag: "Cancelled" })
      await expect(lh.cancel(pending.id)).rejects.toMatchObject({ name: "JobNotCancellableError", status: "cancelled" })
      await expect(lh.cancel("nope")).rejects.toMatchObject({ name: "JobNotFoundError" })
      await expect(lh.cancelWhere({})).rejects.toMatchObject({ name: "CancelFilterError", field: "filter" })
      const running = await lh.enqueue(Long, { n: 2 })
      const worker = await lh.startWorker({ concurrency: 1, pollInterval: "50 millis" })
      await until(async () => started)
      expect((await lh.explain(running.id)).reason).toMatchObject({ _tag: "Running", host: worker.host, attempt: 1 })
      expect(await lh.cancelWhere({ name: "Long", status: "processing" })).toEqual({ cancelled: 1 })
      release()
      await until(async () => (await worker.stats()).cancelled === 1)
      expect(heartbeats).toEqual(["JobCancelled"])
      expect((await lh.getJob(running.id))?.status).toBe("cancelled")
      expect((await lh.getJob(running.id))?.history).toMatchObject([{ attempt: 1, outcome: "cancelled", error: null }])
      await worker.stop()
      // cancelled by mistake: dead-job filters take a cancelled job only when they name it
      expect(await lh.retryDead()).toBe(0)
      expect(await lh.retryDead({ ids: [pending.id] })).toBe(1)
      expect(await lh.discardDead({ status: "cancelled" })).toBe(1)
      expect((await lh.listJobs()).map((j) => [j.id, j.status])).toEqual([[pending.id, "pending"]])
    } finally {
      release()
      await done()
    }
  })

  it("a transaction commits the app's SQL and its enqueues together, or neither", { timeout: 60_000 }, async () => {
    const Note = defineJob<{ readonly text: string }>({ name: "Note", perform: () => undefined })
    const { lh, prefix, param, done } = await target.open([Note])
    const table = `${prefix}notes`
    try {
      await lh.migrate()
      await lh.transaction((tx) => tx.query(`CREATE TABLE ${table} (text VARCHAR(100))`))
      const kept = await lh.transaction(async (tx) => {
        await tx.query(`INSERT INTO ${table} (text) VALUES (${param})`, ["kept"])
        return tx.enqueue(Note, { text: "kept" })
      })
      const failure = await lh.transaction(async (tx) => {
        await tx.query(`INSERT INTO ${table} (text) VALUES (${param})`, ["lost"])
        await tx.enqueue(Note, { text: "lost" })
        throw new Error("changed my mind")
      }).catch((e: unknown) => e)
      expect(failure).toMatchObject({ message: "changed my mind" })
      const notes = await lh.transaction((tx) => tx.query(`SELECT text FROM ${table}`))
      expect(notes).toEqual([{ text: "kept" }])
      expect((await lh.listJobs()).map((j) => j.id)).toEqual([kept.id])
      // a tx kept past its callback refuses to run on a connection the pool took back
      let leaked: Parameters<Parameters<LeaseholdClient["transaction"]>[0]>[0] | undefined
      await lh.transaction(async (tx) => void (leaked = tx))
      await expect(leaked!.enqueue(Note, { text: "late" })).rejects.toThrow(/transaction is over/)
      expect(await lh.listJobs()).toHaveLength(1)
      await lh.transaction((tx) => tx.query(`DROP TABLE ${table}`))
    } finally {
      await done()
    }
  })
})

describe("createLeasehold", () => {
  it("needs exactly one of url and pool, and a url that is not empty", async () => {
    await expect(createLeasehold({ jobs: [] })).rejects.toThrow(/exactly one of url and pool/)
    // an empty SQLite file name would be a temporary database, gone (with its jobs) on close
    await expect(createLeasehold({ url: " ", jobs: [] })).rejects.toThrow(/url is empty/)
    // A misspelt option (as from JavaScript) is refused by name, not dropped.
    const misspelt = { url: "unused.db", jobs: [], prefx: "app_" } as unknown as Parameters<typeof createLeasehold>[0]
    await expect(createLeasehold(misspelt)).rejects.toThrow(
      /unknown option prefx \(known: url, pool, jobs, prefix, tracing, logger\)/
    )
  })

  it("refuses a worker once closed", async () => {
    const lh = await createLeasehold({ url: join(dir, "closed.db"), jobs: [] })
    await lh.close()
    await lh.close()
    await expect(lh.startWorker()).rejects.toThrow(/closed/)
  })

  it("rejects at once, with the driver's error, when the database cannot be reached", { timeout: 30_000 }, async () => {
    const error = await createLeasehold({ url: "postgres://nobody@127.0.0.1:1/none", jobs: [] }).catch((e: unknown) =>
      e
    )
    expect(error).toBeInstanceOf(Error)
    expect(error).toMatchObject({ name: "SqlError" })
  })
})
