/**
 * PostgreSQL LISTEN/NOTIFY: an idle worker with a very long poll interval starts a freshly
 * enqueued job because of the notification, and the listener comes back after its connection
 * is killed. Asserts the wake-up path (the worker's notified count), not a wall-clock bound.
 */
import { expect, layer } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Exit, Layer, Option, Ref, Redacted, Scope, TestServices } from "effect"
import { JobStore } from "../../src/JobStore.ts"
import { enqueue } from "../../src/runtime/Job.ts"
import * as LocalWakeups from "../../src/adapters/localWakeups.ts"
import * as PostgresWakeups from "../../src/adapters/postgres/wakeups.ts"
import { listenerName } from "../../src/adapters/postgres/wakeups.ts"
import { Wakeups } from "../../src/ports/Wakeups.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { PG_URL, postgresLayer } from "../support/databases.ts"
import { eventually, Ok, RunLog, withJobs } from "../support/jobs.ts"

const pgClientLayer = PgClient.layer({ url: Redacted.make(PG_URL), maxConnections: 5 })

/**
 * An idle worker on `host` whose poll interval is an hour, in a scope of its own, once its
 * listener has announced itself: `before` is its notified count then; its runs go to `log`.
 */
const listeningWorker = (host: string) =>
  Effect.gen(function*() {
    const log = yield* Ref.make<ReadonlyArray<{ id: string; n: number; attempt: number }>>([])
    const scope = yield* Scope.make()
    const worker = yield* Effect.map(
      Layer.buildWithScope(
        Worker.layer({ host, concurrency: 1, pollInterval: "1 hour", reapInterval: "1 hour" }),
        scope
      ).pipe(Effect.provideService(RunLog, log)),
      (context) => Context.get(context, Worker.WorkerHandle)
    )
    // the listener announces itself once connected
    yield* eventually(Effect.map(worker.stats, (st) => st.notified >= 1))
    return { worker, scope, log, before: (yield* worker.stats).notified }
  })

/** Waits until job `id` has completed. */
const completed = (id: string) =>
  eventually(
    Effect.map(Effect.flatMap(JobStore, (s) => s.get(id)), (r) => Option.exists(r, (j) => j.status === "completed"))
  )

layer(Layer.merge(postgresLayer("nt"), pgClientLayer), { timeout: 60_000 })("LISTEN/NOTIFY on postgres", (it) => {
  // An enqueue inside a transaction is not rung in its process (its rows are not visible before
  // the commit), as another process's enqueue is not: the notification wakes the worker.
  it.effect("an enqueue wakes an idle worker whose poll interval is an hour", () =>
    TestServices.provideLive(withJobs(
      [Ok],
      Effect.gen(function*() {
        const { before, log, scope, worker } = yield* listeningWorker("listener")
        const sql = yield* SqlClient.SqlClient
        const { id } = yield* sql.withTransaction(enqueue(Ok, { n: 1 }))
        yield* completed(id)
        expect((yield* worker.stats).notified).toBeGreaterThan(before)
        expect((yield* Ref.get(log)).map((r) => r.id)).toEqual([id])

        // kill the LISTEN connection: the listener reconnects, and wake-ups work again
        const name = listenerName((yield* JobStore).tables.channel)
        const killed = yield* sql<
          { ok: boolean }
        >`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = ${name}`
        expect(killed).toHaveLength(1)
        const afterKill = (yield* worker.stats).notified
        yield* eventually(Effect.map(worker.stats, (s) => s.notified > afterKill))
        const second = yield* sql.withTransaction(enqueue(Ok, { n: 2 }))
        yield* completed(second.id)
        yield* Scope.close(scope, Exit.void)
      })
    )))

  // An enqueue outside a transaction rings this process's workers itself
  // (src/adapters/localWakeups.ts): its own notification, marked as this process's, is skipped,
  // so the worker does not claim a second time for it and find nothing.
  it.effect("an enqueue in the worker's own process wakes it by its ring; its own notification is skipped", () =>
    TestServices.provideLive(withJobs(
      [Ok],
      Effect.gen(function*() {
        const { before, log, scope, worker } = yield* listeningWorker("own")
        const sql = yield* SqlClient.SqlClient
        const own = yield* enqueue(Ok, { n: 1 })
        yield* completed(own.id)
        // Notifications arrive in commit order: once the next one (inside a transaction, so not
        // this process's ring) is counted, the first would have been too.
        const next = yield* sql.withTransaction(enqueue(Ok, { n: 2 }))
        yield* completed(next.id)
        yield* eventually(Effect.map(worker.stats, (s) => s.notified > before))
        expect((yield* worker.stats).notified).toBe(before + 1)
        expect((yield* Ref.get(log)).map((r) => r.id)).toEqual([own.id, next.id])
        yield* Scope.close(scope, Exit.void)
      })
    )))

  // The ring's rule itself (src/runtime/Job.ts ringIfDue): due jobs enqueued outside a
  // transaction ring this process; inside one, whose rows nobody sees before the commit, they do
  // not (a worker woken then would claim and find nothing); nor do jobs due later.
  it.effect("an enqueue rings this process only outside a transaction, and only for a job due now", () =>
    TestServices.provideLive(withJobs(
      [Ok],
      Effect.scoped(Effect.gen(function*() {
        let rings = 0
        yield* LocalWakeups.subscribe((yield* JobStore).tables.channel, () => rings++)
        const sql = yield* SqlClient.SqlClient
        yield* sql.withTransaction(enqueue(Ok, { n: 1 }))
        expect(rings).toBe(0)
        yield* enqueue(Ok, { n: 2 }, { runAt: Date.now() + 3_600_000 })
        expect(rings).toBe(0)
        yield* enqueue(Ok, { n: 3 })
        expect(rings).toBe(1)
      }))
    )))

  // A Wakeups service of the app's own may offer only the stream (src/ports/Wakeups.ts): the
  // worker listens through it.
  it.effect("a Wakeups service without onSignal wakes the worker through its stream", () =>
    TestServices.provideLive(withJobs(
      [Ok],
      Effect.gen(function*() {
        const { listen } = PostgresWakeups.make((yield* PgClient.PgClient).config)
        const { before, scope, worker } = yield* listeningWorker("streamed").pipe(
          Effect.provideService(Wakeups, { listen })
        )
        // In a transaction: not rung in this process, so only the notification wakes the worker.
        const { id } = yield* (yield* SqlClient.SqlClient).withTransaction(enqueue(Ok, { n: 1 }))
        yield* eventually(Effect.map(worker.stats, (s) => s.notified > before))
        yield* completed(id)
        yield* Scope.close(scope, Exit.void)
      })
    )))
})
