/**
 * The long-running worker (docs/behaviour.md §9): `concurrency` fibers that claim and run jobs
 * and wait on the doorbell (./doorbell.ts) when idle, a reaper, the host row kept fresh,
 * wake-up signals (src/ports/Wakeups.ts) and a graceful shutdown.
 */
import { explain } from "./explain.ts"
import { Cause, Clock, Context, Effect, Fiber, Layer, Metric, Option, Ref, Schedule, type Scope, Stream } from "effect"
import type { WorkerConfigError } from "../../core/errors.ts"
import { emptyTally, type QueueTally } from "../../core/jobs.ts"
import { JobStore } from "../../ports/JobStore.ts"
import { Wakeups } from "../../ports/Wakeups.ts"
import * as WakeupsAdapter from "../../adapters/wakeups.ts"
import * as Metrics from "../metrics.ts"
import type { WorkerServices } from "./attempt.ts"
import { makeDoorbell } from "./doorbell.ts"
import { cachedDraining, touchHost } from "./hosts.ts"
import { resolveWorker, type WorkerConfig } from "./options.ts"
import { ProcessResult, tallyOf } from "./results.ts"
import { claimThenRun, reapWith } from "./turns.ts"

/** What a running worker reports (`skipped` counts deferrals on busy leases). */
export interface WorkerStats extends QueueTally {
  readonly host: string
  readonly running: number
  readonly reaped: number
  /** Wake-ups by notification (PostgreSQL LISTEN/NOTIFY) rather than by polling. */
  readonly notified: number
}

/** A running worker. */
export interface WorkerApi {
  readonly host: string
  readonly stats: Effect.Effect<WorkerStats>
  /** Wakes an idle fiber now (as a notification would); one that finds work wakes another. */
  readonly wake: Effect.Effect<void>
}

/** The running worker service, present while its layer's scope is open. */
export class WorkerHandle extends Context.Tag("leasehold/Worker")<WorkerHandle, WorkerApi>() {}

// One attempt's outcome in the metrics (a lost lease is counted where it is reported: ./outcome.ts).
const countOutcome = (result: ProcessResult, ms: number) =>
  Effect.gen(function*() {
    yield* Metric.update(Metrics.duration, ms)
    switch (result._tag) {
      case "Completed":
        return yield* Metric.increment(Metrics.completed)
      case "Failed":
        return yield* Metric.increment(result.willRetry ? Metrics.retried : Metrics.failed)
      case "Fenced":
        return yield* Metric.increment(Metrics.fenced)
      case "Deferred":
        return yield* Metric.increment(Metrics.deferred)
    }
  })

/**
 * Runs a worker for as long as the layer's scope is open: `concurrency` fibers claim and run
 * jobs, a reaper runs every `reapInterval`, and the host row is refreshed. Idle fibers poll, and
 * wake at once on a wake-up signal: the `Wakeups` service in context, or else the ones the
 * current SqlClient offers (LISTEN/NOTIFY with a `PgClient`).
 *
 * When the scope closes (including on SIGINT/SIGTERM under `NodeRuntime.runMain`), the worker
 * stops claiming, lets running attempts finish within `gracePeriod`, then interrupts them; an
 * interrupted attempt is reaped and retried later under the normal rules, and its lease expires.
 */
export const make = (
  config: WorkerConfig = {}
): Effect.Effect<WorkerApi, WorkerConfigError, WorkerServices | Scope.Scope> =>
  Effect.gen(function*() {
    const { concurrency, grace, options: o, poll, reapEvery } = yield* resolveWorker(config)
    const store = yield* JobStore
    const stats = yield* Ref.make<WorkerStats>({ ...emptyTally, host: o.host, running: 0, reaped: 0, notified: 0 })
    const bell = yield* makeDoorbell(concurrency, poll)

    const touch = touchHost(store, o, config.codeVersion)
    yield* Effect.ignoreLogged(touch)
    // Claims and attempts in flight in this process.
    const running = (delta: number) =>
      Effect.zipRight(
        Ref.update(stats, (s) => ({ ...s, running: s.running + delta })),
        Metric.incrementBy(Metrics.running, delta)
      )
    const record = (result: ProcessResult, ms: number) =>
      Effect.gen(function*() {
        yield* Ref.update(stats, (s) => ({ ...s, ...tallyOf(s, result) }))
        yield* countOutcome(result, ms)
        if (config.onResult) yield* config.onResult(result)
      })
    // Read at most once per poll interval, whatever the number of fibers.
    const isDraining = yield* cachedDraining(store, o.host, poll)

    const loop = Effect.gen(function*() {
      let woken = false
      while (!(yield* bell.stopping)) {
        if (yield* isDraining) {
          yield* bell.idle
          continue
        }
        const started = yield* Clock.currentTimeMillis
        // Woken and found work: there may be more, so wake one more fiber.
        const onClaimed = woken ? bell.ring : Effect.void
        woken = false
        const result = yield* Effect.acquireUseRelease(running(1), () => claimThenRun(o, onClaimed), () => running(-1))
          .pipe(
            // A database hiccup (or the database is gone): log, wait a poll, carry on. Defects
            // too: a ROLLBACK on a broken connection dies inside @effect/sql, and a loop fiber
            // that died would silently stop claiming. Only an interruption ends the loop.
            Effect.catchAllCause((cause) =>
              Cause.isInterruptedOnly(cause)
                ? Effect.failCause(cause)
                : Effect.as(
                  Effect.logWarning(
                    `claim failed (${explain(Cause.squash(cause))}); retrying after the poll interval`,
                    cause
                  ),
                  ProcessResult.Idle()
                )
            )
          )
        if (result._tag === "Idle" || result._tag === "Capped") {
          woken = yield* bell.idle
          continue
        }
        yield* record(result, (yield* Clock.currentTimeMillis) - started)
      }
    })

    const fibers = yield* Effect.forEach(Array.from({ length: concurrency }), () => Effect.forkDaemon(loop), {
      concurrency: "unbounded"
    })

    const reaper = yield* Effect.forkDaemon(
      Effect.repeat(
        Effect.gen(function*() {
          const n = yield* Effect.orElseSucceed(
            Effect.tapError(reapWith(o), (e) => Effect.logWarning("reap failed", e)),
            () => 0
          )
          if (n > 0) {
            yield* Ref.update(stats, (s) => ({ ...s, reaped: s.reaped + n }))
            yield* Metric.incrementBy(Metrics.reaped, n)
            yield* Effect.repeatN(bell.ring, Math.min(n, concurrency) - 1)
          }
          yield* Effect.ignoreLogged(touch)
        }),
        Schedule.spaced(reapEvery)
      )
    )

    // Wake-up signals, if the database sends any; the listener reconnects by itself if dropped.
    const wakeups = yield* Option.match(yield* Effect.serviceOption(Wakeups), {
      onNone: () => WakeupsAdapter.fromContext,
      onSome: Effect.succeed
    })
    const signals = wakeups.listen(store.tables.channel)
    const listener = Option.isSome(signals)
      ? Option.some(
        yield* Effect.forkDaemon(
          Stream.runForEach(
            signals.value,
            () => Effect.zipRight(Ref.update(stats, (s) => ({ ...s, notified: s.notified + 1 })), bell.ring)
          )
        )
      )
      : Option.none()

    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        yield* bell.stop
        yield* Fiber.interrupt(reaper)
        if (Option.isSome(listener)) yield* Fiber.interrupt(listener.value)
        // Finalizers run uninterruptibly: the wait must be made interruptible for the timeout to cut it.
        const finished = yield* Effect.timeout(Effect.interruptible(Fiber.awaitAll(fibers)), grace).pipe(Effect.option)
        if (Option.isNone(finished)) {
          yield* Effect.logWarning(
            `worker ${o.host}: attempts still running after the grace period; interrupting them (they will be reaped and retried)`
          )
          yield* Fiber.interruptAll(fibers)
        }
        yield* Effect.logInfo(`worker ${o.host} stopped`)
      })
    )
    yield* Effect.logInfo(`worker ${o.host} started: ${concurrency} fibers, queues ${o.queues?.join(", ") ?? "all"}`)

    return WorkerHandle.of({
      host: o.host,
      stats: Ref.get(stats),
      wake: bell.ring
    })
  })

/** The long-running worker as a scoped layer; see `make`. */
export const layer = (config: WorkerConfig = {}): Layer.Layer<WorkerHandle, WorkerConfigError, WorkerServices> =>
  Layer.scoped(WorkerHandle, make(config))
