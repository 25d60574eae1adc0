/**
 * The long-running worker's fibers besides its claimer and runners (docs/behaviour.md §9): the
 * reaper, which also keeps the host row fresh; the retention passes (./maintenance.ts); and the
 * listener for wake-up signals (src/ports/Wakeups.ts).
 */
import { Duration, Effect, type Fiber, Option, Schedule, Stream } from "effect"
import * as WakeupsAdapter from "../../adapters/wakeups.ts"
import type { JobStore, JobStoreApi } from "../../ports/JobStore.ts"
import { Wakeups } from "../../ports/Wakeups.ts"
import type { Jobs } from "../Job.ts"
import type { Doorbell } from "./doorbell.ts"
import { warnFailure } from "./explain.ts"
import { type ResolvedRetention, retentionLoop } from "./maintenance.ts"
import type { Resolved } from "./options.ts"
import type { Counters } from "./stats.ts"
import { reapWith } from "./turns.ts"

/**
 * Forks the reaper: every `reapEvery`, stale rows reaped (counted in `counters`; reaped jobs may
 * be due again now, so the bell rings) and the host row refreshed (`touch`). A failed reap is
 * logged and tried again at the next turn.
 */
export const startReaper = (
  o: Resolved,
  reapEvery: Duration.Duration,
  bell: Doorbell,
  touch: Effect.Effect<unknown, unknown>,
  counters: Counters
): Effect.Effect<Fiber.RuntimeFiber<unknown, unknown>, never, JobStore | Jobs> =>
  Effect.forkDaemon(
    Effect.repeat(
      Effect.gen(function*() {
        const n = yield* Effect.orElseSucceed(
          Effect.tapError(
            reapWith(o),
            (e) => warnFailure((reason) => `reap failed (${reason}); trying again in ${Duration.format(reapEvery)}`, e)
          ),
          () => 0
        )
        if (n > 0) {
          counters.reaped += n
          // Reaped jobs may be due again now.
          yield* bell.ring
        }
        yield* Effect.ignoreLogged(touch)
      }),
      Schedule.spaced(reapEvery)
    )
  )

/**
 * Forks the retention passes: completed and dead jobs and silent hosts past their retention, in
 * bounded batches (./maintenance.ts); none without `retention`.
 */
export const startMaintenance = (
  store: JobStoreApi,
  retention: ResolvedRetention | undefined
): Effect.Effect<Fiber.RuntimeFiber<never, never> | undefined> =>
  retention === undefined ? Effect.succeed(undefined) : Effect.forkDaemon(retentionLoop(store, retention))

/**
 * Forks the listener for wake-up signals, if the database sends any (the `Wakeups` service in
 * context, or else the ones the current SqlClient offers); each rings the bell and is counted in
 * `counters`. The listener reconnects by itself if dropped.
 */
export const startListener = (
  store: JobStoreApi,
  bell: Doorbell,
  counters: Counters
): Effect.Effect<Fiber.RuntimeFiber<void, never>> =>
  Effect.gen(function*() {
    const wakeups = yield* Option.match(yield* Effect.serviceOption(Wakeups), {
      onNone: () => WakeupsAdapter.fromContext,
      onSome: Effect.succeed
    })
    const listening = wakeups.onSignal === undefined
      ? Option.map(
        wakeups.listen(store.tables.channel),
        (stream) => Stream.runForEach(stream, () => Effect.zipRight(Effect.sync(() => counters.notified++), bell.ring))
      )
      : wakeups.onSignal(store.tables.channel, () => {
        counters.notified++
        bell.ringNow()
      })
    return yield* Effect.forkDaemon(Option.getOrElse(listening, () => Effect.void))
  })
