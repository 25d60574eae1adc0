/**
 * Deadlocks on the way out of an attempt (docs/retries.md), on the two servers that have them.
 *
 * A trigger on the jobs table makes the server itself refuse the first N completions with its
 * deadlock error (PostgreSQL SQLSTATE 40P01, MariaDB errno 1213), counted by a sequence, which a
 * rollback does not undo. The driver, the error classification and the retry are all real.
 * SQLite is not here: one writer at a time, so it has no deadlocks (SQLITE_BUSY waits in the
 * driver), and the memory store has no SQL.
 *
 * Every test runs on a TestClock that never moves: a retry that slept on the caller's clock
 * would hang here until the test timeout.
 */
import { SqlClient } from "@effect/sql"
import { MysqlClient } from "@effect/sql-mysql2"
import { PgClient } from "@effect/sql-pg"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer, Logger, LogLevel, Metric, Redacted, Ref, TestClock } from "effect"
import { JobStore } from "../../src/JobStore.ts"
import { retriesExhausted, TRANSIENT_RETRIES, transientRetries } from "../../src/adapters/sql/retry.ts"
import { enqueue } from "../../src/runtime/Job.ts"
import { processNext, processQueue } from "../../src/runtime/Worker.ts"
import { type AdapterName, layerFor, MYSQL_URL, PG_URL } from "../support/databases.ts"
import { Ok, RunLog, withJobs } from "../support/jobs.ts"

const T0 = 1_791_039_632_175

/** A client of its own for the trigger DDL, kept apart from the store's pool. */
const adminLayer = (adapter: "postgres" | "mysql"): Layer.Layer<SqlClient.SqlClient> =>
  adapter === "postgres"
    ? Layer.orDie(PgClient.layer({ url: Redacted.make(PG_URL), onnotice: () => {} } as any))
    : Layer.orDie(MysqlClient.layer({ url: Redacted.make(MYSQL_URL) }))

/** Drops what a test made when it ends, on a client of its own (the test's own may be gone). */
const dropAfterwards = (adapter: "postgres" | "mysql", statements: ReadonlyArray<string>) =>
  Effect.addFinalizer(() =>
    Effect.ignore(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => Effect.forEach(statements, (st) => sql.unsafe(st), { discard: true })
      ).pipe(
        Effect.provide(adminLayer(adapter))
      )
    )
  )

/** Makes the server refuse the next `n` completions of rows in `jobs` with its deadlock error; returns the fault sequence. */
const forceDeadlocks = (adapter: "postgres" | "mysql", jobs: string, n: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // A name of its own per test: a suite's tests share their tables.
    const seq = `${jobs}_f${Math.random().toString(36).slice(2, 8)}`
    if (adapter === "postgres") {
      yield* sql.unsafe(`CREATE SEQUENCE "${seq}"`)
      yield* sql.unsafe(`CREATE FUNCTION "${seq}_fn"() RETURNS trigger AS $$
BEGIN
  IF NEW.status = 'completed' AND nextval('"${seq}"') <= ${n} THEN
    RAISE EXCEPTION 'forced deadlock' USING ERRCODE = '40P01';
  END IF;
  RETURN NEW;
END $$ LANGUAGE plpgsql`)
      yield* sql.unsafe(
        `CREATE TRIGGER "${seq}_tr" BEFORE UPDATE ON "${jobs}" FOR EACH ROW EXECUTE FUNCTION "${seq}_fn"()`
      )
      yield* dropAfterwards(adapter, [
        `DROP FUNCTION IF EXISTS "${seq}_fn"() CASCADE`,
        `DROP SEQUENCE IF EXISTS "${seq}"`
      ])
    } else {
      yield* sql.unsafe(`CREATE SEQUENCE \`${seq}\``)
      yield* sql.unsafe(`CREATE TRIGGER \`${seq}_tr\` BEFORE UPDATE ON \`${jobs}\` FOR EACH ROW
BEGIN
  IF NEW.status = 'completed' THEN
    IF NEXTVAL(\`${seq}\`) <= ${n} THEN
      SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213, MESSAGE_TEXT = 'forced deadlock';
    END IF;
  END IF;
END`)
      yield* dropAfterwards(adapter, [`DROP TRIGGER IF EXISTS \`${seq}_tr\``, `DROP SEQUENCE IF EXISTS \`${seq}\``])
    }
    return seq
  }).pipe(Effect.provide(adminLayer(adapter)), Effect.orDie)

/** Log lines at debug level and above, as "LEVEL message". */
const capturingLogs = Effect.map(Ref.make<ReadonlyArray<string>>([]), (lines) => ({
  lines,
  logger: Logger.make(({ logLevel, message }) => {
    const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
    Ref.update(lines, (l) => [...l, `${logLevel.label} ${text}`]).pipe(Effect.runSync)
  })
}))

const counted = (metric: typeof transientRetries, purpose: string) =>
  Effect.map(Metric.value(Metric.tagged(metric, "purpose", purpose)), (s) => Number(s.count))

const suite = (adapter: Extract<AdapterName, "postgres" | "mysql">) =>
  layer(layerFor(adapter, "dl"), { timeout: 120_000 })(`Forced deadlocks on ${adapter}`, (it) => {
    it.scoped(
      "a worker on a TestClock that never moves finishes every job through deadlocked completions",
      () =>
        withJobs(
          [Ok],
          Effect.gen(function*() {
            const { lines, logger } = yield* capturingLogs
            const store = yield* JobStore
            yield* TestClock.setTime(T0)
            const total = 40
            for (let n = 0; n < total; n++) yield* enqueue(Ok, { n })
            yield* forceDeadlocks(adapter, store.tables.jobs, 6)
            const before = (yield* counted(transientRetries, "complete")) + (yield* counted(transientRetries, "finish"))
            const tallies = yield* Effect.all(
              Array.from({ length: 4 }, (_, w) => processQueue({ host: `w${w}`, limit: 0 })),
              { concurrency: "unbounded" }
            ).pipe(
              Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
              Logger.withMinimumLogLevel(LogLevel.Debug)
            )
            expect(tallies.reduce((n, t) => n + t.processed, 0)).toBe(total)
            expect((yield* store.counts).filter((c) => c.status !== "completed")).toEqual([])
            const after = (yield* counted(transientRetries, "complete")) + (yield* counted(transientRetries, "finish"))
            // Each forced failure was sent again: one retry per refused statement (a refused batch
            // counts once however many rows it carried, so at least one and at most six).
            expect(after - before).toBeGreaterThanOrEqual(1)
            expect(after - before).toBeLessThanOrEqual(6)
            const debug = (yield* Ref.get(lines)).filter((l) =>
              l.startsWith("DEBUG") && l.includes("rolled back by the database")
            )
            expect(debug.length).toBe(after - before)
            expect(debug[0]).toMatch(/^DEBUG (complete|finish)/)
          }).pipe(
            Effect.provideServiceEffect(RunLog, Ref.make<ReadonlyArray<{ id: string; n: number; attempt: number }>>([]))
          )
        ),
      60_000
    )

    it.scoped(
      "a completion that deadlocks past the bound gives up with a warning naming it; the job stays claimed",
      () =>
        withJobs(
          [Ok],
          Effect.gen(function*() {
            const { lines, logger } = yield* capturingLogs
            const store = yield* JobStore
            yield* TestClock.setTime(T0)
            const job = yield* enqueue(Ok, { n: 1 })
            const seq = yield* forceDeadlocks(adapter, store.tables.jobs, 1000)
            const before = yield* counted(retriesExhausted, "finish")
            const result = yield* Effect.either(
              processNext({ host: "w" }).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
            )
            expect(result._tag).toBe("Left")
            expect(yield* counted(retriesExhausted, "finish")).toBe(before + 1)
            const warnings = (yield* Ref.get(lines)).filter((l) => l.startsWith("WARN"))
            expect(warnings.some((l) =>
              l.includes(`finish (job ${job.id})`) && l.includes(`${TRANSIENT_RETRIES + 1} times`) &&
              l.includes("giving up")
            )).toBe(true)
            // Nothing was written: the row is still the attempt's, for the reaper to take back later.
            const row = yield* store.get(job.id)
            expect(row._tag === "Some" && row.value.status).toBe("processing")
            // The completion was tried exactly 1 + TRANSIENT_RETRIES times (the sequence counts them).
            const used = yield* Effect.provide(
              Effect.flatMap(SqlClient.SqlClient, (sql) =>
                adapter === "postgres"
                  ? sql.unsafe<{ v: unknown }>(`SELECT last_value AS v FROM "${seq}"`)
                  : sql.unsafe<{ v: unknown }>(`SELECT NEXTVAL(\`${seq}\`) - 1 AS v`)),
              adminLayer(adapter)
            )
            expect(Number(used[0]!.v)).toBe(TRANSIENT_RETRIES + 1)
          }).pipe(
            Effect.provideServiceEffect(RunLog, Ref.make<ReadonlyArray<{ id: string; n: number; attempt: number }>>([]))
          )
        ),
      60_000
    )
  })

suite("postgres")
suite("mysql")
