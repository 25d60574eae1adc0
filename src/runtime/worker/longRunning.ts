/**
 * The long-running worker (docs/behaviour.md §9): `concurrency` fibers that claim and run jobs
 * and wait on the doorbell (./doorbell.ts) when idle, a reaper, the host row kept fresh,
 * wake-up signals (src/ports/Wakeups.ts) and a graceful shutdown.
 */
import { explain, warnFailure } from "./explain.ts"
import type { SqlError } from "@effect/sql/SqlError"
import {
  Cause,
  Clock,
  Context,
  Duration,
  Effect,
  Exit,
  Fiber,
  FiberRef,
  Layer,
  Option,
  Queue,
  Schedule,
  type Scope,
  Stream
} from "effect"
import type { JobRow } from "../../core/model.ts"
import type { WorkerConfigError } from "../../core/errors.ts"
import { emptyTally, type QueueTally } from "../../core/jobs.ts"
import { mayTakeLease } from "../../core/lease.ts"
import { JobStore } from "../../ports/JobStore.ts"
import { Jobs } from "../Job.ts"
import { Wakeups } from "../../ports/Wakeups.ts"
import * as LocalWakeups from "../../adapters/localWakeups.ts"
import * as WakeupsAdapter from "../../adapters/wakeups.ts"
import { addRunning } from "../metrics.ts"
import type { WorkerServices } from "./attempt.ts"
import { makeDoorbell } from "./doorbell.ts"
import { makeHandBack } from "./handBack.ts"
import { retentionLoop } from "./maintenance.ts"
import { makeWatchdog } from "./watchdog.ts"
import { cachedDraining, touchHost } from "./hosts.ts"
import { resolveWorker, type WorkerConfig } from "./options.ts"
import { ProcessResult, tallyOf } from "./results.ts"
import { claimInput, claimInputAt, reapWith } from "./turns.ts"
import { RECHECK_AFTER_MS, runClaimed } from "./attempt.ts"
import { makeKeyClaims } from "./keyClaims.ts"
import { makeKeyGate } from "./keyGate.ts"
import { makeReadyBuffer } from "./readyBuffer.ts"
import { CLAIM_AHEAD_MS, makeStartTimes, MAX_AHEAD_FACTOR } from "./claimAhead.ts"
import { type OneShot, unsafeMakeOneShot } from "../../core/oneShot.ts"
import { handOffNow } from "./outcome.ts"
import { runScheduler } from "./scheduler.ts"
import { noneInFlight, stopPerform } from "./perform.ts"

/** How long a claimed job may wait before it is read again (defined in ./attempt.ts). */
export { RECHECK_AFTER_MS } from "./attempt.ts"

/**
 * The drain state's age allowed whatever the poll interval (docs/behaviour.md §9): with a poll
 * shorter than this, the state is still read only about once a second.
 */
export const DRAIN_STATE_MIN_AGE = Duration.seconds(1)

/** A claimed job in the buffer, with when it was claimed. */
interface Buffered {
  readonly job: JobRow
  readonly claimedAt: number
}

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
    // The worker's Clock, read in place on each attempt's path (its fibers all have this one).
    const clock = yield* Effect.clock
    // What `stats` reports, as plain counters: updated on every attempt, read only when asked
    // (wake-ups by notification are counted from the listener's callback, outside any fiber).
    let tally: QueueTally = emptyTally
    let runningNow = 0
    let reaped = 0
    let notified = 0
    // On a database without wake-up signals, a cheap probe between polls (src/ports/JobStore.ts).
    const bell = yield* makeDoorbell(
      poll,
      Option.getOrUndefined(Option.map(store.idleProbe, (p) => ({
        everyMs: p.everyMs,
        look: Effect.flatMap(claimInput(o), p.read)
      })))
    )
    // One timer for every attempt's timeout (./watchdog.ts).
    const timer = yield* makeWatchdog()
    // The keys this worker's attempts hold, so the next run of a busy key waits for them (./keyGate.ts).
    const gate = makeKeyGate(timer)
    // The jobs it has claimed per key, so a claim skips a key it already has enough of (./keyClaims.ts).
    const keyClaims = makeKeyClaims()
    const registry = yield* Jobs
    const limitOf = (job: JobRow) =>
      Option.match(registry.get(job.name), { onNone: () => 1, onSome: (r) => r.type.concurrencyLimit })
    // Only a worker with job types that take leases claims by key: that claim is a dearer statement.
    const byKey = registry.names.some((name) => Option.exists(registry.get(name), (r) => mayTakeLease(r.type.lease)))

    const touch = touchHost(store, o, config.codeVersion)
    yield* Effect.ignoreLogged(touch)
    // Attempts running in this process (claimed jobs waiting in `ready` are not counted).
    const running = (delta: number) => {
      addRunning(delta)
      runningNow += delta
    }
    // Never older than the poll interval, or a second with a shorter one (./hosts.ts): read on
    // the worker's own timer, off the claims' path; at most about once a second, since a busy
    // claimer's reads were a statement every poll.
    const drainView = yield* cachedDraining(store, o.host, Duration.max(poll, DRAIN_STATE_MIN_AGE))

    // Claimed jobs not yet started. The claimer keeps some of them ahead of the runners, so a
    // runner that ends an attempt starts the next one without waiting for a claim (issue 13:
    // claims and runs in lock-step left both Node and the database half idle): `concurrency`, or
    // as many as the runners started in the last CLAIM_AHEAD_MS if more, up to MAX_AHEAD_FACTOR
    // × `concurrency`. Quick jobs are so claimed in batches that last the runners a few
    // milliseconds, while slow ones are not held back from other workers.
    const ready = makeReadyBuffer<Buffered>()
    const room = { active: 0, buffered: 0, contended: 0 }
    const starts = makeStartTimes(concurrency * MAX_AHEAD_FACTOR)
    // Claiming ahead pays on a queue of independent jobs; on a busy concurrency key it only
    // claims jobs to defer (issue 13's hot key). After a deferral, the next 2 × `concurrency`
    // claims are for idle runners only.
    const capacity = () =>
      room.contended > 0
        ? concurrency
        : concurrency + Math.max(concurrency, starts.since(clock.unsafeCurrentTimeMillis() - CLAIM_AHEAD_MS))
    // A batch claim waits until half the buffer's room is free, unless the runners have nothing left.
    const batch = Math.max(1, Math.ceil(concurrency / 2))
    const slotFreed = yield* Queue.sliding<void>(1)
    // What the shutdown hands back (./handBack.ts).
    const hands = makeHandBack(store, o.host)

    // Claims up to `n` jobs (with `only`, of those keys alone): one statement, or with a host cap
    // one job through the capped claim. Its input is made in place (the worker's Clock read as a
    // plain call): on an idle worker each step before the statement goes out is on the job's
    // path, and costs there what a dozen do in a drain (issue 13's latency).
    const claimSome = (n: number, only?: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<JobRow>, SqlError> =>
      Effect.suspend(() => {
        const at = claimInputAt(o, clock.unsafeCurrentTimeMillis())
        const input = byKey ? { ...at, perKey: { skip: keyClaims.skip(), only } } : at
        const claimed = (o.hostCap ?? 0) <= 0
          ? store.claimMany(input, n)
          : Effect.map(store.claim(input), (c) => (c._tag === "Claimed" ? [c.job] : []))
        return Effect.map(claimed, (rows) => {
          for (const job of rows) keyClaims.claimed(job, limitOf(job))
          return rows
        })
      })

    const claimer = Effect.gen(function*() {
      // Whether to look at the whole queue; else only the freed keys' next jobs are claimed (one
      // statement for the keys freed meanwhile, one job per key), until a ring or the poll: a freed
      // key's next job is all that changed.
      let look = true
      while (!bell.stopping()) {
        if (drainView.fresh() ?? (yield* drainView.read)) {
          yield* bell.idle
          look = true
          continue
        }
        const freedOnly = !look && keyClaims.hasFreed()
        if (!look && !freedOnly) {
          look = yield* bell.idle
          continue
        }
        const free = capacity() - room.active - room.buffered
        if (free < (freedOnly || room.buffered === 0 ? 1 : batch)) {
          yield* Queue.take(slotFreed)
          continue
        }
        let keys: ReadonlyArray<string> | undefined
        if (freedOnly) keys = keyClaims.takeFreed()
        // A look at the whole queue takes freed keys' jobs too.
        else keyClaims.clearFreed()
        const asked = keys === undefined ? free : Math.min(free, keys.length)
        const rows = yield* Effect.catchAllCause(claimSome(asked, keys), (cause) =>
          // A database hiccup (or the database is gone): log, wait a poll, carry on. Defects too:
          // a ROLLBACK on a broken connection dies inside @effect/sql, and a claimer that died
          // would silently stop claiming. Only an interruption ends the loop.
          Cause.isInterruptedOnly(cause)
            ? Effect.failCause(cause)
            : Effect.as(
              warnFailure((reason) => `claim failed (${reason}); retrying after the poll interval`, cause),
              []
            ))
        room.buffered += rows.length
        room.contended = Math.max(0, room.contended - rows.length)
        const claimedAt = clock.unsafeCurrentTimeMillis()
        ready.offerAll(rows.map((job) => ({ job, claimedAt })))
        // Fewer than asked: nothing more is due now (wait for a wake-up signal or the poll), unless
        // the claim took a job of a key: it took one per key, so look again (./keyClaims.ts).
        if (keys === undefined && rows.length < free && rows.every((job) => job.claimLease === null)) look = false
      }
    })

    // The runners' own log annotations (the worker's), to which each attempt adds its job's.
    const annotations = yield* FiberRef.get(FiberRef.currentLogAnnotations)
    // What the end of an attempt settles, in place. A release skipped its hand-off for an attempt
    // that did not take the lease after all (./keyGate.ts): the key's next waiter is woken by the
    // returned effect, if any (never this job itself). An interrupted attempt is remembered for the
    // hand-back (./handBack.ts). Its runner is free (if it was not already), whatever happens.
    const settle = (
      job: JobRow,
      exit: Exit.Exit<unknown, unknown>,
      free: (early: boolean) => void
    ): Effect.Effect<void, never, JobStore> | undefined => {
      let owed: string | undefined
      try {
        owed = gate.leave(job.claimToken!)
        running(-1)
        hands.ended(job, exit)
        // A key the claim skipped has room again: claim its next job while this one's successor runs.
        if (keyClaims.ended(job)) bell.nudge()
      } finally {
        free(false)
      }
      return owed === undefined ? undefined : handOffNow(owed, job.id)
    }
    // One attempt, settled however it ends, and reported: the end is handled in one
    // uninterruptible step (an acquire/use/release and an `ensuring` were a tenth of the worker's
    // steps per job, and a separate catch and report a few more, issue 13). `behind`: its runner
    // may be freed before its end, once perform has succeeded (see `attempts`).
    const attemptOf = (job: JobRow, recheck: boolean, free: (early: boolean) => void, behind: boolean) =>
      Effect.uninterruptibleMask((restore) => {
        running(1)
        const performed = behind ? () => free(true) : undefined
        // Interrupted (a stopping worker), the attempt stops its perform and waits for it here.
        const inFlight = noneInFlight()
        return Effect.matchCauseEffect(
          // The attempt's log annotations are set on its fiber (the runner's, on SQLite) and left
          // there until the next attempt's: a runner logs nothing between attempts.
          restore(runClaimed(job, o, { timer, recheck, rootSpan: true, gate, annotations, performed, inFlight })),
          {
            onFailure: (cause) =>
              Effect.zipRight(
                stopPerform(inFlight),
                Effect.suspend(() => {
                  const owed = settle(job, Exit.failCause(cause), free)
                  return owed === undefined ? unwritten(job, cause) : Effect.zipRight(owed, unwritten(job, cause))
                })
              ),
            onSuccess: (result) => {
              const owed = settle(job, Exit.succeed(result), free)
              // Outcomes are counted in the metrics where every entry point's attempts are (./observe.ts).
              tally = tallyOf(tally, result)
              if (result._tag === "Deferred") room.contended = concurrency * 2
              // The caller's hook runs interruptibly, as the attempt did: a hook that hangs must
              // not hold up a stop.
              const reported = config.onResult === undefined ? Effect.void : restore(config.onResult(result))
              return owed === undefined ? reported : Effect.zipRight(owed, reported)
            }
          }
        )
      })
    // An attempt that ended without an outcome: the outcome could not be written (the database
    // went away mid-attempt): the row stays processing and the reaper takes it back.
    const unwritten = (job: JobRow, cause: Cause.Cause<unknown>): Effect.Effect<void> =>
      Cause.isInterruptedOnly(cause)
        ? Effect.failCause(cause as Cause.Cause<never>)
        : Effect.logWarning(
          `attempt of ${job.name} ${job.id} ended without an outcome (${
            explain(Cause.squash(cause))
          }); the reaper will take it back`,
          cause
        )

    // Attempts on a database server run in a fiber of their own: the runner waits for one only
    // until perform has succeeded (`performed`), then starts its next job while the attempt writes
    // its outcome (and releases its lease), which a group commit takes with the others' (issue 13:
    // runners that waited for every write kept the drain half idle). An attempt that fails, or
    // passes its lease to the next run of its key waiting here, holds its runner to its end; so
    // does every attempt on SQLite, whose writes wait on no server (JobStoreApi `remote`).
    const attempts = new Set<Fiber.RuntimeFiber<void, unknown>>()
    // Outcomes being written behind their runners, at most as many as are claimed ahead: past
    // that, runners wait for writes to land (a drain of 100,000 jobs otherwise claimed faster than
    // it wrote, and held tens of thousands of attempts waiting for their writes).
    const maxBehind = concurrency * MAX_AHEAD_FACTOR
    let behind = 0
    // A cell per waiting runner (a cell holds one waiter); every landed write wakes them all to
    // look again, so one that stopped waiting (interrupted) never swallows another's wake-up.
    const roomWaiters: Array<OneShot<void, never>> = []
    const wroteBehind = () => {
      behind--
      for (const waiter of roomWaiters.splice(0)) waiter.complete(Exit.void)
    }
    const waitForRoomBehind: Effect.Effect<void> = Effect.suspend(() => {
      if (behind < maxBehind) return Effect.void
      const room = unsafeMakeOneShot<void, never>()
      roomWaiters.push(room)
      return Effect.zipRight(room.await, waitForRoomBehind)
    })
    // A loop, not `Effect.forever`: that yields to the scheduler after every job, a hop of its own
    // per job (the runtime still yields after a run of steps, and every wait here suspends).
    const runner = Effect.gen(function*() {
      while (true) {
        // A job waiting is taken in place; only an empty buffer is waited on.
        const { claimedAt, job } = ready.poll() ?? (yield* ready.take)
        const now = clock.unsafeCurrentTimeMillis()
        // A job that waited in the buffer is read again before it starts: it may have been
        // cancelled since its claim (RECHECK_AFTER_MS).
        const recheck = now - claimedAt >= RECHECK_AFTER_MS
        room.buffered--
        room.active++
        starts.add(now)
        // Made only for an attempt in a fiber of its own, whose runner waits on it.
        let freed: OneShot<void, never> | undefined
        // Holding its runner; then, freed early, writing behind it; then ended.
        let stage: "holding" | "behind" | "ended" = "holding"
        const free = (early: boolean) => {
          if (stage === "behind" && !early) {
            stage = "ended"
            return wroteBehind()
          }
          if (stage !== "holding") return
          stage = early ? "behind" : "ended"
          if (early) behind++
          room.active--
          Queue.unsafeOffer(slotFreed, undefined)
          freed?.complete(Exit.void)
        }
        if (!store.remote) {
          yield* attemptOf(job, recheck, free, false)
          continue
        }
        const runnerFreed = unsafeMakeOneShot<void, never>()
        freed = runnerFreed
        const fiber = yield* Effect.forkDaemon(attemptOf(job, recheck, free, true))
        attempts.add(fiber)
        fiber.addObserver(() => attempts.delete(fiber))
        yield* runnerFreed.await
        if (behind >= maxBehind) yield* waitForRoomBehind
      }
    })

    const runners = yield* Effect.forEach(Array.from({ length: concurrency }), () => Effect.forkDaemon(runner), {
      concurrency: "unbounded"
    })
    // Enqueues in this process (src/adapters/localWakeups.ts), on every database: subscribed
    // before the claimer's first look, so an enqueue right after the worker starts rings it.
    yield* LocalWakeups.subscribe(store.tables.channel, bell.ringNow)
    const claiming = yield* Effect.forkDaemon(claimer)

    // Completed and dead jobs and silent hosts past their retention, in bounded batches (./maintenance.ts).
    const maintenance = retention === undefined ? undefined : yield* Effect.forkDaemon(retentionLoop(store, retention))

    const reaper = yield* Effect.forkDaemon(
      Effect.repeat(
        Effect.gen(function*() {
          const n = yield* Effect.orElseSucceed(
            Effect.tapError(
              reapWith(o),
              (e) =>
                warnFailure((reason) => `reap failed (${reason}); trying again in ${Duration.format(reapEvery)}`, e)
            ),
            () => 0
          )
          if (n > 0) {
            reaped += n
            // Reaped jobs may be due again now.
            yield* bell.ring
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
    const listening = wakeups.onSignal === undefined
      ? Option.map(
        wakeups.listen(store.tables.channel),
        (stream) => Stream.runForEach(stream, () => Effect.zipRight(Effect.sync(() => notified++), bell.ring))
      )
      : wakeups.onSignal(store.tables.channel, () => {
        notified++
        bell.ringNow()
      })
    const listener = yield* Effect.forkDaemon(Option.getOrElse(listening, () => Effect.void))

    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        yield* bell.stop
        yield* Queue.offer(slotFreed, undefined)
        yield* Fiber.interrupt(reaper)
        if (maintenance !== undefined) yield* Fiber.interrupt(maintenance)
        yield* Fiber.interrupt(listener)
        // Finalizers run uninterruptibly: a wait must be made interruptible for its timeout to cut it.
        const within = <A>(effect: Effect.Effect<A>) =>
          Effect.timeout(Effect.interruptible(effect), grace).pipe(Effect.option)
        // A claim in flight comes back first, so what it claimed is given back rather than left
        // to the reaper; then the claimed jobs no runner has started go back to pending.
        if (Option.isNone(yield* within(Fiber.await(claiming)))) yield* Fiber.interrupt(claiming)
        const unstarted = ready.takeAll()
        room.buffered -= unstarted.length
        ready.shutdown()
        yield* hands.handBack(unstarted.map((b) => b.job))
        // Attempts whose runner has moved on may still be writing their outcome: waited for too.
        const allEnded = Effect.zipRight(Fiber.awaitAll(runners), Effect.suspend(() => Fiber.awaitAll([...attempts])))
        if (Option.isNone(yield* within(allEnded))) {
          yield* Effect.logWarning(
            `worker ${o.host}: attempts still running after the grace period; interrupting them and handing them back`
          )
          // An attempt whose perform does not stop within another grace period is not handed
          // back: it is left to the reaper, and its lease to expire.
          yield* within(Effect.zipRight(Fiber.interruptAll([...attempts]), Fiber.interruptAll(runners)))
          yield* hands.handBack([])
        }
        yield* Effect.logInfo(`worker ${o.host} stopped`)
      })
    )
    // Recurring jobs (./scheduler.ts): stopped first when the scope closes.
    yield* Effect.forkScoped(runScheduler(Duration.toMillis(poll)))
    yield* Effect.logInfo(`worker ${o.host} started: ${concurrency} fibers, queues ${o.queues?.join(", ") ?? "all"}`)

    return WorkerHandle.of({
      host: o.host,
      stats: Effect.sync(() => ({ ...tally, host: o.host, running: runningNow, reaped, notified })),
      wake: bell.ring
    })
  })

/** The long-running worker as a scoped layer; see `make`. */
export const layer = (config: WorkerConfig = {}): Layer.Layer<WorkerHandle, WorkerConfigError, WorkerServices> =>
  Layer.scoped(WorkerHandle, make(config))
