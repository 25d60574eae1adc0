/**
 * leasehold quick start: `npm start` (or `npx tsx examples/quickstart.ts`).
 *
 * On an embedded SQLite file (./leasehold.db, or the path in LEASEHOLD_DATABASE_URL) it
 *   1. runs leasehold's migrations,
 *   2. defines three job types: an exclusive nightly report, an account sync keyed by account,
 *      and a receipt mailer that sometimes fails and is retried,
 *   3. enqueues a burst of 40 jobs,
 *   4. runs two workers ("worker-a" and "worker-b", 3 jobs at a time each) until every job is
 *      completed or dead, printing progress,
 *   5. checks, from a log the jobs wrote while running, that no key ever ran twice at once.
 *
 * Exit code 0 when all went as it should; 1 on an overlap, a lost lease, or after 60 s.
 * Ctrl-C stops the workers gracefully.
 */
import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { NodeRuntime } from "@effect/platform-node"
import { Clock, Effect, Layer, Logger, LogLevel, Ref, Schema } from "effect"
import { Job, JobStore, Leasehold, Migrator, tableNames, Worker } from "leasehold"

const DATABASE_FILE = (process.env.LEASEHOLD_DATABASE_URL ?? "./leasehold.db").replace(/^(sqlite|file):(\/\/)?/, "")
/** The demo's tables live under their own prefix, apart from any app tables in the same file. */
const PREFIX = "quickstart_"

// ---------------------------------------------------------------------------------------------
// A log the jobs write as they run. It is only for the demo: it lets us prove afterwards that
// no two runs of the same key (an account, or the exclusive report) were ever running at the
// same time, although six fibers in two workers were pulling jobs as fast as they could. Both
// workers are in this process, so the order of the entries is the order things happened.

interface LogEntry {
  readonly event: "start" | "end"
  /** What must never run twice at once; null for jobs without a key. */
  readonly key: string | null
  readonly job: string
  readonly host: string
}
const runLog = Ref.unsafeMake<ReadonlyArray<LogEntry>>([])

/** Runs `work` inside perform, writing its start and end to the log. */
const logged = (key: string | null, work: Effect.Effect<void, Error>) =>
  Effect.gen(function*() {
    const ctx = yield* Job.JobContext // the running attempt: job id, attempt number, host, …
    const write = (event: "start" | "end") =>
      Ref.update(runLog, (log) => [...log, { event, key, job: `${ctx.name} ${ctx.jobId.slice(0, 8)}`, host: ctx.host }])
    yield* write("start")
    yield* Effect.ensuring(work, write("end"))
  })

// ---------------------------------------------------------------------------------------------
// 1. Job types. A type has a name, a Schema for its payload, options, and perform.

/** Exclusive: at most one NightlyReport runs at a time, on any worker (lease `job:NightlyReport`). */
const NightlyReport = Job.define({
  name: "NightlyReport",
  schema: Schema.Struct({ day: Schema.String }),
  exclusive: true,
  perform: () => logged("job:NightlyReport", Effect.sleep("150 millis"))
})

/** Keyed: syncs of one account run one at a time; different accounts run side by side. */
const SyncAccount = Job.define({
  name: "SyncAccount",
  schema: Schema.Struct({ accountId: Schema.String, page: Schema.Number }),
  concurrencyKeyFor: (p) => `account-${p.accountId}`,
  perform: (p) => logged(`key:account-${p.accountId}`, Effect.sleep("80 millis"))
})

/**
 * Plain (no lease), and it fails now and then: every fifth order's first try fails, and order 13
 * always fails, so after 1 + 2 retries it is dead. Retries wait 0.4 s, then 0.8 s (capped at 1 s).
 */
const SendReceipt = Job.define({
  name: "SendReceipt",
  schema: Schema.Struct({ orderId: Schema.Number }),
  maxRetries: 2,
  backoff: { kind: "exponential", baseSeconds: 0.2, maxSeconds: 1 },
  perform: (p) =>
    Effect.gen(function*() {
      const { attempt } = yield* Job.JobContext
      yield* logged(null, Effect.sleep("30 millis"))
      if (p.orderId === 13) return yield* Effect.fail(new Error("mailbox does not exist"))
      if (p.orderId % 5 === 0 && attempt === 1) return yield* Effect.fail(new Error("mail server busy"))
    })
})

const jobTypes = [NightlyReport, SyncAccount, SendReceipt] as const

// ---------------------------------------------------------------------------------------------
// 2. Enqueue a burst: 3 reports, 18 syncs over 3 accounts, 19 receipts — 40 jobs.

const enqueueBurst = Effect.gen(function*() {
  for (const day of ["2026-12-01", "2026-12-02", "2026-12-03"]) yield* Job.enqueue(NightlyReport, { day })
  for (let page = 1; page <= 6; page++) {
    for (const accountId of ["acme", "globex", "initech"]) yield* Job.enqueue(SyncAccount, { accountId, page })
  }
  for (let orderId = 1; orderId <= 19; orderId++) yield* Job.enqueue(SendReceipt, { orderId })
  return 40
})

// ---------------------------------------------------------------------------------------------
// 3. What the workers report: every outcome, per job type (Worker's `onResult` hook).

interface Tally {
  completed: number
  dead: number
  retries: number
  deferrals: number
  leasesLost: number
}
const tallies = Ref.unsafeMake<Readonly<Record<string, Tally>>>({})

const onResult = (result: Worker.ProcessResult) =>
  Ref.update(tallies, (all) => {
    if (!("job" in result)) return all
    const t: Tally = { ...(all[result.job.name] ?? { completed: 0, dead: 0, retries: 0, deferrals: 0, leasesLost: 0 }) }
    if (result._tag === "Completed") t.completed++
    if (result._tag === "Failed") result.willRetry ? t.retries++ : t.dead++
    if (result._tag === "Deferred") t.deferrals++
    if ("leaseLost" in result && result.leaseLost) t.leasesLost++
    return { ...all, [result.job.name]: t }
  })

// ---------------------------------------------------------------------------------------------
// 4. The program.

const program = Effect.gen(function*() {
  console.log(`leasehold quick start on SQLite ${DATABASE_FILE} (tables ${PREFIX}*)\n`)
  yield* startFresh

  // Migrations create leasehold's tables; they run under a lock, so every instance of an app
  // may run them at start-up.
  const migrator = yield* Migrator.make({ prefix: PREFIX })
  const { applied } = yield* migrator.run
  console.log(`migrations: applied ${applied.map((m) => `#${m.id} ${m.name}`).join(", ") || "none (up to date)"}`)

  const total = yield* enqueueBurst
  console.log(`enqueued ${total} jobs: 3 NightlyReport (exclusive), 18 SyncAccount (3 accounts), 19 SendReceipt\n`)

  const started = yield* Clock.currentTimeMillis
  // Two workers in one process; in production they would be separate processes or machines
  // sharing the database. Each runs 3 jobs at a time, looks for due jobs every 50 ms when idle,
  // and on shutdown gives running jobs 2 s to finish. They stop when the program's scope closes.
  const config = { concurrency: 3, pollInterval: "50 millis", gracePeriod: "2 seconds", onResult } as const
  const workers = yield* Effect.all([
    Worker.make({ ...config, host: "worker-a" }),
    Worker.make({ ...config, host: "worker-b" })
  ])

  // Progress: four lines a second, from the jobs table and the workers' stats.
  const store = yield* JobStore.JobStore
  let finished = false
  while (!finished) {
    yield* Effect.sleep("250 millis")
    const counts = yield* store.counts
    const count = (status: string) => counts.filter((c) => c.status === status).reduce((n, c) => n + c.count, 0)
    const stats = yield* Effect.forEach(workers, (w) => w.stats)
    const deferred = stats.reduce((n, s) => n + s.skipped, 0)
    const elapsed = (yield* Clock.currentTimeMillis) - started
    const seconds = (elapsed / 1000).toFixed(1)
    console.log(
      `[${seconds.padStart(4)} s] completed ${pad(count("completed"))}  dead ${count("failed")}  ` +
        `running ${count("processing")}  pending ${pad(count("pending"))}  ` +
        `(deferrals so far ${deferred}; attempts by worker-a/worker-b: ${
          stats.map((s) => s.processed + s.failed).join("/")
        })`
    )
    finished = count("pending") + count("processing") === 0
    if (!finished && elapsed > 60_000) {
      console.error("\ngave up: jobs still pending after 60 s")
      return 1
    }
  }
  return yield* summary
})

const pad = (n: number) => String(n).padStart(2)

/** A demo starts from empty tables so every run tells the same story. (A real app never does this.) */
const startFresh = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = tableNames(PREFIX)
  for (const table of [t.jobs, t.hosts, t.jobLocks, t.migrationLocks, t.migrations]) {
    yield* sql.unsafe(`DROP TABLE IF EXISTS "${table}"`)
  }
})

/** The summary, and the check over the run log. Returns the exit code. */
const summary = Effect.gen(function*() {
  const all = yield* Ref.get(tallies)
  console.log("\njob type        completed  dead  retries  deferrals (busy lease)  leases lost")
  let lost = 0
  for (const type of jobTypes) {
    const t = all[type.name] ?? { completed: 0, dead: 0, retries: 0, deferrals: 0, leasesLost: 0 }
    lost += t.leasesLost
    console.log(
      `${type.name.padEnd(15)} ${String(t.completed).padStart(9)}  ${String(t.dead).padStart(4)}  ${
        String(t.retries).padStart(7)
      }  ` +
        `${String(t.deferrals).padStart(22)}  ${String(t.leasesLost).padStart(11)}`
    )
  }

  // Walk the log in order: a "start" for a key while another run of it has not ended is an overlap.
  const log = yield* Ref.get(runLog)
  const running = new Map<string, Array<LogEntry>>()
  const overlaps: Array<string> = []
  const runsPerKey = new Map<string, number>()
  for (const entry of log) {
    if (entry.key === null) continue
    const others = running.get(entry.key) ?? []
    if (entry.event === "end") {
      running.set(entry.key, others.filter((o) => o.job !== entry.job))
      continue
    }
    for (const o of others) {
      overlaps.push(`${entry.key}: ${entry.job} on ${entry.host} started while ${o.job} on ${o.host} ran`)
    }
    running.set(entry.key, [...others, entry])
    runsPerKey.set(entry.key, (runsPerKey.get(entry.key) ?? 0) + 1)
  }
  const keys = [...runsPerKey].map(([key, n]) => `${key} ×${n}`).join(", ")
  console.log(`\nruns per key: ${keys}`)
  console.log(`leases lost: ${lost}${lost === 0 ? "" : "  ✗ (a run outlived its lease; see the warnings)"}`)
  if (overlaps.length > 0) {
    console.log(
      `no key ever ran twice at once: ✗ (${overlaps.length} overlaps)\n  ${overlaps.slice(0, 10).join("\n  ")}`
    )
    return 1
  }
  console.log("no key ever ran twice at once: ✓")
  return lost === 0 ? 0 : 1
})

// ---------------------------------------------------------------------------------------------
// 5. Wiring: leasehold's services over the app's SqlClient (here SQLite), then run.

const LeaseholdLive = Leasehold.layer({ prefix: PREFIX, jobs: jobTypes }).pipe(
  Layer.provideMerge(SqliteClient.layer({ filename: DATABASE_FILE }))
)

NodeRuntime.runMain(
  program.pipe(
    Effect.map((code) => {
      process.exitCode = code
    }),
    Effect.scoped, // closing the scope stops the workers
    Effect.provide(LeaseholdLive),
    // The workers log every failed attempt as a warning; this demo prints its own summary
    // instead. Remove the next line to see them.
    Logger.withMinimumLogLevel(LogLevel.Error)
  )
)
