/**
 * One attempt of a claimed job (docs/behaviour.md §6, §8): decode its payload (./payload.ts),
 * take its lease (./attemptLease.ts, or defer the job when the lease is busy), run perform
 * (./perform.ts), and record what happened (./finish.ts). Nothing here fails for a job's sake: a
 * bad payload, an unknown type or a perform error become outcomes.
 *
 * The parts are plain generators the attempt's one `Effect.gen` runs with `yield*`
 * (./attemptState.ts `Steps`): a job's path has no more steps of the Effect runtime for being
 * split into them.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Clock, Context, Effect, Either, type Fiber, FiberRef, HashMap } from "effect"
import type { JobRow } from "../../core/model.ts"
import { isTracing } from "../../infra/tracer.ts"
import { JobLeases, JobStore } from "../../ports/JobStore.ts"
import type { ScheduleStore } from "../../ports/ScheduleStore.ts"
import { setInPlace } from "../inPlace.ts"
import { Jobs } from "../Job.ts"
import { traceAttempt } from "../tracing.ts"
import { freshAtStart, holdLease } from "./attemptLease.ts"
import { admit, limitedType } from "./flowControl.ts"
import type { Attempt } from "./attemptState.ts"
import { checkClaim } from "./claimCheck.ts"
import { finish } from "./finish.ts"
import type { KeyGate } from "./keyGate.ts"
import { observeAttempt } from "./observe.ts"
import type { Resolved } from "./options.ts"
import { runnableJob } from "./payload.ts"
import { type InFlight, perform } from "./perform.ts"
import { giveBackCap, releaseCap } from "./typeCap.ts"
import type { ProcessResult } from "./results.ts"
import { watch, type Watch } from "./watchdog.ts"

/** The services of the worker's entry points (the long-running worker's scheduler needs `ScheduleStore`). */
export type WorkerServices = JobStore | JobLeases | Jobs | ScheduleStore

/** How long a claimed job may wait before it is read again (defined in ./claimCheck.ts). */
export { RECHECK_AFTER_MS } from "./claimCheck.ts"

/** How `runClaimed` runs an attempt. */
export interface RunClaimedOptions {
  /** Watches its timeout (default: a timer of its own). */
  readonly timer?: Watch | undefined
  /** The job waited since its claim: its claim is read first, and a job cancelled meanwhile is not run. */
  readonly recheck?: boolean | undefined
  /**
   * Its span starts a trace of its own even inside a caller's span (a long-running worker's
   * attempts: the span its scope was opened in is no parent of theirs). Default: it nests.
   */
  readonly rootSpan?: boolean | undefined
  /** This worker's keys (./keyGate.ts): an attempt whose key its other attempts hold waits for them. */
  readonly gate?: KeyGate | undefined
  /**
   * The fiber is the attempt's own (a long-running worker's attempt fiber, or its runner on
   * SQLite): the attempt's log annotations, these with the job's (`attemptAnnotations`), are set
   * on it in place and left there until the next attempt's replace them. Default: the job's are
   * added to the caller's for the attempt only.
   */
  readonly annotations?: HashMap.HashMap<string, unknown> | undefined
  /**
   * Called once perform has succeeded, unless the attempt passes its lease to one waiting for it
   * in this worker (./keyGate.ts): all that is left is its outcome write, and its lease's release
   * (a long-running worker's runner starts its next job meanwhile, ./runners.ts).
   */
  readonly performed?: (() => void) | undefined
  /** The caller stops perform itself when the attempt is interrupted (./perform.ts `InFlight`). */
  readonly inFlight?: InFlight | undefined
}

/**
 * The log annotations every line of an attempt of `job` carries, added to `base`: with the lease
 * its enqueue named (`claimLease`) as `leaseName`; the attempt corrects that in the rare case its
 * job type now names another (`runAttempt`). `base` is never an earlier attempt's (a long-running
 * worker's runners pass the worker's own), so a job without a lease leaves `base` as it is.
 */
export const attemptAnnotations = (
  base: HashMap.HashMap<string, unknown>,
  job: JobRow
): HashMap.HashMap<string, unknown> =>
  // One transient edit of the map, not four copies of it. Setting the fiber's annotations costs a
  // copy of its FiberRefs and a hash of the whole map, so the lease's name is set with the rest,
  // not added later.
  HashMap.mutate(base, (m) => {
    HashMap.set(m, "jobId", job.id)
    HashMap.set(m, "jobName", job.name)
    HashMap.set(m, "attempt", job.attempts)
    if (job.claimLease !== null) HashMap.set(m, "leaseName", job.claimLease)
  })

/** Runs one claimed job to its outcome. */
export const runClaimed = (
  job: JobRow,
  o: Resolved,
  options: RunClaimedOptions = {}
): Effect.Effect<ProcessResult, SqlError, WorkerServices> =>
  // Whether a tracer is installed, the Clock and the log level: read off the fiber in one step,
  // in which an attempt in a fiber of its own also sets its log annotations.
  Effect.withFiberRuntime((fiber) => {
    if (options.annotations !== undefined) {
      setInPlace(fiber, FiberRef.currentLogAnnotations, attemptAnnotations(options.annotations, job))
    }
    const observed = observeAttempt(
      fiber,
      job,
      runAttempt(
        job,
        o,
        options,
        // The attempt's services, read once: its requirements say they are there.
        fiber.currentContext as Context.Context<JobLeases | JobStore | Jobs>,
        fiber
      )
    )
    const traced = isTracing(fiber.currentTracer) ? traceAttempt(job, observed, options.rootSpan ?? false) : observed
    return options.annotations !== undefined
      ? traced
      : Effect.locallyWith(traced, FiberRef.currentLogAnnotations, (base) => attemptAnnotations(base, job))
  })

/** The attempt's own state (./attemptState.ts), read once off its fiber and services. */
const attemptOf = (
  job: JobRow,
  o: Resolved,
  gate: KeyGate | undefined,
  services: Context.Context<JobLeases | JobStore | Jobs>,
  fiber: Fiber.RuntimeFiber<unknown, unknown>
): Attempt => {
  const token = job.claimToken!
  return {
    job,
    token,
    claimed: job.leaseTaken === undefined ? undefined : {
      name: job.leaseTaken.name,
      owner: token,
      expiresAt: job.leaseTaken.expiresAt,
      fencingToken: job.leaseTaken.fencingToken
    },
    o,
    gate,
    store: Context.get(services, JobStore),
    leases: Context.get(services, JobLeases),
    clock: Context.get(fiber.currentDefaultServices, Clock.Clock),
    tracing: isTracing(fiber.currentTracer)
  }
}

/**
 * `leaseName` was annotated from the row's lease (`attemptAnnotations`); corrected in place when
 * the job type now names another, for the rest of the attempt: a fiber whose annotations were set
 * in place (`annotations`) is the attempt's until the next attempt sets its own, and otherwise
 * `runClaimed` set them for the attempt only (its scope puts back the caller's).
 */
const correctLeaseName = (
  fiber: Fiber.RuntimeFiber<unknown, unknown>,
  job: JobRow,
  leaseName: string | undefined
): void => {
  if (leaseName !== (job.claimLease ?? undefined)) {
    const current = fiber.getFiberRef(FiberRef.currentLogAnnotations)
    setInPlace(
      fiber,
      FiberRef.currentLogAnnotations,
      leaseName === undefined ? HashMap.remove(current, "leaseName") : HashMap.set(current, "leaseName", leaseName)
    )
  }
}

/**
 * The attempt itself: its claim read again if the job waited, the job made runnable, its lease
 * held, perform run, and its end written. Each part may end the attempt early with its result.
 */
const runAttempt = (
  job: JobRow,
  o: Resolved,
  { gate, inFlight, performed, recheck = false, timer }: RunClaimedOptions,
  services: Context.Context<JobLeases | JobStore | Jobs>,
  // The fiber the attempt runs in: whether a tracer is installed, its Clock and its log annotations.
  fiber: Fiber.RuntimeFiber<unknown, unknown>
): Effect.Effect<ProcessResult, SqlError, WorkerServices> =>
  Effect.gen(function*() {
    const a = attemptOf(job, o, gate, services, fiber)
    if (recheck) {
      const stop = yield* checkClaim(a)
      if (stop !== undefined) {
        return stop
      }
    }
    const runnable = yield* runnableJob(a, Context.get(services, Jobs))
    if (Either.isLeft(runnable)) {
      return runnable.left
    }
    const { leaseName, payload, registered } = runnable.right
    // The type as the live limits have it (./flowControl.ts), or the job paused.
    const limited = yield* limitedType(a, registered.type, leaseName)
    if (Either.isLeft(limited)) return limited.left
    const type = limited.right
    const lease = yield* holdLease(a, leaseName, type)
    if (Either.isLeft(lease)) {
      return lease.left
    }
    const held = lease.right
    const backoff = type.backoff
    // The type's cap, a lowered limit's slots and the rate limit, after the key's lease.
    const admitted = yield* admit(a, type, registered.type, leaseName, held)
    if (Either.isLeft(admitted)) return admitted.left
    const { cap, rate } = admitted.right
    // A pause since the lease was taken (the cap's and rate's round trips, a stopped process)
    // must not start perform on a lease that ran out and went to another run.
    let running = held
    if (held !== undefined && leaseName !== undefined) {
      const fresh = yield* freshAtStart(a, held, leaseName)
      if (Either.isLeft(fresh)) {
        if (cap !== undefined) yield* giveBackCap(a, cap)
        return fresh.left
      }
      running = fresh.right
    }
    correctLeaseName(fiber, job, leaseName)
    const exit = yield* perform(job, registered, payload, o.host, running, timer ?? watch, services, inFlight, {
      cap: cap?.name,
      rate
    })
    const result = yield* finish(a, { exit, held: running, leaseName, backoff, performed })
    return cap === undefined ? result : yield* releaseCap(a, cap, exit, result)
  })
