/**
 * The long-running worker's runners (docs/behaviour.md §9): `concurrency` fibers that take
 * claimed jobs from the pipeline (./pipeline.ts) and run each attempt (./attempt.ts), settling
 * its end in place: the key it held, the counters, the hand-back of an interrupted attempt.
 *
 * Attempts on a database server run in a fiber of their own: the runner waits for one only until
 * perform has succeeded (`performed`), then starts its next job while the attempt writes its
 * outcome (and releases its lease), which a group commit takes with the others' (runners that
 * waited for every write left the drain idle while the writes went out; ./writeBehind.ts bounds
 * how many). An attempt that fails, or passes its lease to the next run of its key waiting here,
 * holds its runner to its end; so does every attempt on SQLite, whose writes wait on no server
 * (JobStoreApi `remote`).
 */
import { Cause, type Clock, Effect, Exit, type Fiber, FiberRef, Queue } from "effect"
import type { JobRow } from "../../core/model.ts"
import { type OneShot, unsafeMakeOneShot } from "../../infra/oneShot.ts"
import type { JobStore, JobStoreApi } from "../../ports/JobStore.ts"
import { RECHECK_AFTER_MS, runClaimed, type WorkerServices } from "./attempt.ts"
import { MAX_AHEAD_FACTOR } from "./claimAhead.ts"
import type { Alarms } from "./alarms.ts"
import type { Doorbell } from "./doorbell.ts"
import { explain } from "./explain.ts"
import type { HandBack } from "./handBack.ts"
import type { KeyClaims } from "./keyClaims.ts"
import type { KeyGate } from "./keyGate.ts"
import type { Resolved } from "./options.ts"
import { handOffNow } from "./outcome.ts"
import { noneInFlight, stopPerform } from "./perform.ts"
import type { Pipeline } from "./pipeline.ts"
import { type ProcessResult, tallyOf } from "./results.ts"
import { addRunningTo, type Counters } from "./stats.ts"
import type { Watch } from "./watchdog.ts"
import { makeWriteBehind } from "./writeBehind.ts"

/** What the runners work with, all made by `make` (./longRunning.ts). */
export interface RunnerParts {
  readonly o: Resolved
  readonly concurrency: number
  readonly store: JobStoreApi
  /** The worker's Clock, read in place. */
  readonly clock: Clock.Clock
  /** The worker's watchdog, timing every attempt (./watchdog.ts). */
  readonly timer: Watch
  readonly gate: KeyGate
  readonly keyClaims: KeyClaims
  readonly bell: Doorbell
  /** Rings `bell` when a job this worker deferred is due again (./alarms.ts). */
  readonly alarms: Alarms
  readonly hands: HandBack
  readonly counters: Counters
  readonly pipeline: Pipeline
  /** The app's hook, called with every attempt's result (`WorkerConfig.onResult`). */
  readonly onResult: ((result: ProcessResult) => Effect.Effect<void>) | undefined
}

/** The runner fibers, and the attempts running in fibers of their own (writing behind, perhaps). */
export interface Runners {
  readonly runners: ReadonlyArray<Fiber.RuntimeFiber<never, unknown>>
  readonly attempts: ReadonlySet<Fiber.RuntimeFiber<void, unknown>>
}

/**
 * An attempt that ended without an outcome: the outcome could not be written (the database
 * went away mid-attempt): the row stays processing and the reaper takes it back.
 */
const unwritten = (job: JobRow, cause: Cause.Cause<unknown>): Effect.Effect<void> =>
  Cause.isInterruptedOnly(cause)
    ? Effect.failCause(cause as Cause.Cause<never>)
    : Effect.logWarning(
      `attempt of ${job.name} ${job.id} ended without an outcome (${
        explain(Cause.squash(cause))
      }); the reaper will take it back`,
      cause
    )

/** Forks `concurrency` runners, daemons that run until interrupted (the worker's shutdown). */
export const startRunners = (parts: RunnerParts): Effect.Effect<Runners, never, WorkerServices> =>
  Effect.gen(function*() {
    const { alarms, bell, clock, concurrency, counters, gate, hands, keyClaims, o, onResult, pipeline, store, timer } =
      parts
    const { ready, room, slotFreed, starts } = pipeline
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
        addRunningTo(counters, -1)
        hands.ended(job, exit)
        // A key the claim skipped has room again: claim its next job while this one's successor runs.
        if (keyClaims.ended(job)) bell.nudge()
      } finally {
        free(false)
      }
      return owed === undefined ? undefined : handOffNow(owed, job.id)
    }
    // One attempt, settled however it ends, and reported: the end is handled in one
    // uninterruptible step (an acquire/use/release and an `ensuring` were a large share of the
    // worker's steps per job, and a separate catch and report a few more). `behind`: its runner
    // may be freed before its end, once perform has succeeded.
    const attemptOf = (job: JobRow, recheck: boolean, free: (early: boolean) => void, behind: boolean) =>
      Effect.uninterruptibleMask((restore) => {
        addRunningTo(counters, 1)
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
              counters.tally = tallyOf(counters.tally, result)
              if (result._tag === "Deferred") {
                room.contended = concurrency * 2
                alarms.at(result.retryAt)
              }
              // The caller's hook runs interruptibly, as the attempt did: a hook that hangs must
              // not hold up a stop.
              const reported = onResult === undefined ? Effect.void : restore(onResult(result))
              return owed === undefined ? reported : Effect.zipRight(owed, reported)
            }
          }
        )
      })

    const attempts = new Set<Fiber.RuntimeFiber<void, unknown>>()
    // Outcomes being written behind their runners, at most as many as are claimed ahead.
    const behind = makeWriteBehind(concurrency * MAX_AHEAD_FACTOR)
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
            return behind.landed()
          }
          if (stage !== "holding") return
          stage = early ? "behind" : "ended"
          if (early) behind.started()
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
        if (behind.full()) yield* behind.waitForRoom
      }
    })

    const runners = yield* Effect.forEach(Array.from({ length: concurrency }), () => Effect.forkDaemon(runner), {
      concurrency: "unbounded"
    })
    return { runners, attempts }
  })
