/**
 * The long-running worker (docs/behaviour.md §9): `concurrency` fibers that claim and run jobs
 * and wait on the doorbell (./doorbell.ts) when idle, a reaper, the host row kept fresh,
 * wake-up signals (src/ports/Wakeups.ts) and a graceful shutdown.
 *
 * `make` assembles it from its components: the claimer (./claimer.ts) and the runners
 * (./runners.ts, with ./writeBehind.ts) around the pipeline of claimed jobs (./pipeline.ts); the
 * reaper, retention passes and listener (./background.ts); the shutdown (./shutdown.ts); and the
 * counters `stats` reports (./stats.ts).
 */
import { Context, Duration, Effect, Layer, Option, type Scope } from "effect"
import type { WorkerConfigError } from "../../core/errors.ts"
import { JobStore } from "../../ports/JobStore.ts"
import { Jobs } from "../Job.ts"
import type { WorkerServices } from "./attempt.ts"
import { startListener, startMaintenance, startReaper } from "./background.ts"
import { makeClaimer } from "./claimer.ts"
import { makeAlarms } from "./alarms.ts"
import { liveLimits } from "./liveLimits.ts"
import { makeDoorbell } from "./doorbell.ts"
import { makeHandBack } from "./handBack.ts"
import { cachedDraining, touchHost } from "./hosts.ts"
import { makeKeyClaims } from "./keyClaims.ts"
import { makeKeyGate } from "./keyGate.ts"
import { resolveWorker, type WorkerConfig } from "./options.ts"
import { makePipeline } from "./pipeline.ts"
import { startRunners } from "./runners.ts"
import { runScheduler } from "./scheduler.ts"
import { shutdown } from "./shutdown.ts"
import { makeCounters, statsOf, type WorkerStats } from "./stats.ts"
import { claimInput } from "./turns.ts"
import { makeWatchdog } from "./watchdog.ts"

/** How long a claimed job may wait before it is read again (defined in ./claimCheck.ts). */
export { RECHECK_AFTER_MS } from "./attempt.ts"
/** What a running worker reports (defined in ./stats.ts). */
export type { WorkerStats } from "./stats.ts"

/**
 * The drain state's age allowed whatever the poll interval (docs/behaviour.md §9): with a poll
 * shorter than this, the state is still read only about once a second.
 */
export const DRAIN_STATE_MIN_AGE = Duration.seconds(1)

/** A running worker. */
export interface WorkerApi {
  readonly host: string
  readonly stats: Effect.Effect<WorkerStats>
  /** Makes an idle worker look for due jobs now (as a notification would). */
  readonly wake: Effect.Effect<void>
}

/** The running worker service, present while its layer's scope is open. */
export class WorkerHandle extends Context.Tag("leasehold/Worker")<WorkerHandle, WorkerApi>() {}

/**
 * Runs a worker for as long as the layer's scope is open: a claimer fiber claims due jobs in
 * batches for `concurrency` runner fibers (claimed ahead by how fast they start them), a reaper runs
 * every `reapInterval`, and the host row is refreshed. An idle claimer polls, and wakes at once
 * on an enqueue or hand-off in this process or a wake-up signal: the `Wakeups` service in
 * context, or else the ones the current SqlClient offers (LISTEN/NOTIFY with a `PgClient`).
 *
 * When the scope closes (including on SIGINT/SIGTERM under `NodeRuntime.runMain`), the worker
 * stops claiming, hands back the claimed jobs no runner started, lets running attempts finish
 * (and outcomes still being written land) within `gracePeriod`, then interrupts them and hands
 * them back at once: pending, attempt given back, leases released and handed off (./handBack.ts).
 */
export const make = (
  config: WorkerConfig = {}
): Effect.Effect<WorkerApi, WorkerConfigError, WorkerServices | Scope.Scope> =>
  Effect.gen(function*() {
    const { concurrency, grace, options: o, poll, reapEvery, retention } = yield* resolveWorker(config)
    const store = yield* JobStore
    // The live limits read before the first claim, so no attempt waits for that read
    // (./liveLimits.ts; a failed read leaves the job types' own limits).
    yield* liveLimits(store, (yield* Effect.clock).unsafeCurrentTimeMillis())
    // The worker's Clock, read in place on each attempt's path (its fibers all have this one).
    const clock = yield* Effect.clock
    const counters = makeCounters()
    // On a database without wake-up signals, a cheap probe between polls (src/ports/JobStore.ts).
    const bell = yield* makeDoorbell(
      poll,
      Option.getOrUndefined(Option.map(store.idleProbe, (p) => ({
        everyMs: p.everyMs,
        look: Effect.flatMap(claimInput(o), p.read)
      })))
    )
    // Jobs this worker deferred ring it when due again, not at the next poll (./alarms.ts).
    const alarms = yield* makeAlarms(bell.ringNow)
    // One timer for every attempt's timeout (./watchdog.ts).
    const timer = yield* makeWatchdog()
    // The keys this worker's attempts hold, so the next run of a busy key waits for them (./keyGate.ts).
    const gate = makeKeyGate(timer)
    // The jobs it has claimed per key, so a claim skips a key it already has enough of (./keyClaims.ts).
    const keyClaims = makeKeyClaims()
    const registry = yield* Jobs

    const touch = touchHost(store, o, config.codeVersion)
    yield* Effect.ignoreLogged(touch)
    // Never older than the poll interval, or a second with a shorter one (./hosts.ts): read on
    // the worker's own timer, off the claims' path; at most about once a second, since a busy
    // claimer's reads were a statement every poll.
    const drainView = yield* cachedDraining(store, o.host, Duration.max(poll, DRAIN_STATE_MIN_AGE))
    // Claimed jobs not yet started, claimed ahead of the runners (./pipeline.ts).
    const pipeline = yield* makePipeline(concurrency)
    // What the shutdown hands back (./handBack.ts).
    const hands = makeHandBack(store, o.host)

    const running = yield* startRunners({
      o,
      concurrency,
      store,
      clock,
      timer,
      gate,
      keyClaims,
      bell,
      alarms,
      hands,
      counters,
      pipeline,
      onResult: config.onResult
    })
    // Enqueues in this process (src/adapters/localWakeups.ts), on every database: subscribed
    // before the claimer's first look, so an enqueue right after the worker starts rings it.
    yield* store.wakeups.subscribe(bell.ringNow)
    const claiming = yield* Effect.forkDaemon(
      makeClaimer({ o, concurrency, store, clock, registry, bell, drainView, keyClaims, pipeline })
    )
    const maintenance = yield* startMaintenance(store, retention)
    const reaper = yield* startReaper(o, reapEvery, bell, touch, counters)
    const listener = yield* startListener(store, bell, counters)

    yield* Effect.addFinalizer(() =>
      shutdown({ host: o.host, grace, bell, pipeline, hands, claiming, running, reaper, maintenance, listener })
    )
    // Recurring jobs (./scheduler.ts): stopped first when the scope closes.
    yield* Effect.forkScoped(runScheduler(Duration.toMillis(poll)))
    yield* Effect.logInfo(`worker ${o.host} started: ${concurrency} fibers, queues ${o.queues?.join(", ") ?? "all"}`)

    return WorkerHandle.of({
      host: o.host,
      stats: Effect.sync(() => statsOf(counters, o.host)),
      wake: bell.ring
    })
  })

/** The long-running worker as a scoped layer; see `make`. */
export const layer = (config: WorkerConfig = {}): Layer.Layer<WorkerHandle, WorkerConfigError, WorkerServices> =>
  Layer.scoped(WorkerHandle, make(config))
