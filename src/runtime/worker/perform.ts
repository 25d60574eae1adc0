/**
 * Running a claimed job's perform (docs/behaviour.md §6–§8): its `JobContext`, whose heartbeat
 * proves life (fenced on the claim token) and renews the job's lease, the job type's
 * `onLeaseLost`, and the attempt's timeout.
 */
import { Cause, Clock, Context, Deferred, Duration, Effect, Either, Exit, Fiber, FiberRef, Option } from "effect"
import { Fenced, JobCancelled, JobTimeoutError, LeaseLostError } from "../../core/errors.ts"
import { leaseExpiresAt } from "../../core/lease.ts"
import type { JobRow } from "../../core/model.ts"
import { JobLeases, JobStore } from "../../ports/JobStore.ts"
import { type HeldLease, JobContext, type JobContextApi, type RegisteredJob } from "../Job.ts"
import { unsafeMakeOneShot } from "../../infra/oneShot.ts"
import { holderOf } from "./outcome.ts"
import { type RateHold, rateStart } from "./rateLimit.ts"
import type { Watch } from "./watchdog.ts"

/**
 * An attempt's perform while the attempt waits for it, for a caller that handles the attempt's
 * interruption itself (./longRunning.ts): interrupted, it stops the perform held here
 * (`stopPerform`). That spares every attempt an exit handler of its own, a large share of its
 * steps.
 */
export interface InFlight {
  fiber: Fiber.RuntimeFiber<unknown, unknown> | undefined
  cancel: Effect.Effect<void>
}

/** An `InFlight` holding nothing. */
export const noneInFlight = (): InFlight => ({ fiber: undefined, cancel: Effect.void })

/**
 * Stops the perform `inFlight` holds (if the attempt was interrupted while it waited for it) and
 * waits until it has stopped; then its timer goes.
 */
export const stopPerform = (inFlight: InFlight): Effect.Effect<void> =>
  inFlight.fiber === undefined ? Effect.void : Effect.zipRight(Fiber.interrupt(inFlight.fiber), inFlight.cancel)

/**
 * Runs perform for a claimed job with its context, lease renewal and timeout, and returns how
 * it ended. Its timeout is the row's claim timeout, which the claim already capped by the
 * worker's `timeoutCap` (docs/behaviour.md §6), watched by `timer` (a long-running worker's shared
 * watchdog, or a timer of its own: ./watchdog.ts). `services`: the attempt's, read once by it.
 * `inFlight`: where the caller finds perform while the attempt waits for it (see `InFlight`).
 */
export const perform = (
  job: JobRow,
  registered: RegisteredJob,
  payload: unknown,
  host: string,
  held: HeldLease | undefined,
  timer: Watch,
  services: Context.Context<JobStore | JobLeases>,
  inFlight?: InFlight,
  slots: { readonly cap?: string | undefined; readonly rate?: RateHold | undefined } = {}
): Effect.Effect<Exit.Exit<unknown, unknown>> =>
  Effect.gen(function*() {
    const store = Context.get(services, JobStore)
    const leases = Context.get(services, JobLeases)
    const type = registered.type
    const token = job.claimToken!
    // The lease as last renewed, which perform reads through its context: plain state, as the
    // attempt's fibers run on one thread.
    let lease = Option.fromNullable(held)
    // Made only for an attempt that perform's lease loss interrupts (a Deferred is dear: ../../infra/oneShot.ts).
    const interruptOnLoss = type.onLeaseLost === "interrupt" && held !== undefined
    const lost = interruptOnLoss ? yield* Deferred.make<never, LeaseLostError>() : undefined
    let lostLogged = false

    // A lease lost at renewal is logged once, not thrown: the run goes on (or is interrupted, if
    // the type asks), and the release at the end reports the loss (./outcome.ts).
    const renewLease = (now: number) =>
      Effect.gen(function*() {
        if (Option.isNone(lease)) return
        const current = lease.value
        const expiresAt = leaseExpiresAt(now, job.claimTimeout)
        const renewed = yield* Effect.either(leases.renew({ name: current.name, owner: token, expiresAt }))
        if (Either.isLeft(renewed)) {
          // A lock-table hiccup must not fail the job: the release at the end will tell.
          return yield* Effect.logWarning(`lease ${current.name} renewal failed; carrying on`, renewed.left)
        }
        if (renewed.right) {
          lease = Option.some({ ...current, expiresAt })
          return
        }
        if (lostLogged) return
        lostLogged = true
        const holder = yield* holderOf(leases, current.name)
        yield* Effect.logWarning(
          `lease ${current.name} was lost: now held by ${holder ?? "nobody"}, not by this attempt (${token}); ` +
            (type.onLeaseLost === "interrupt" ? "interrupting perform" : "perform carries on")
        )
        if (lost !== undefined) {
          yield* Deferred.fail(lost, new LeaseLostError({ leaseName: current.name, owner: token, holder }))
          // perform must not go on past this heartbeat: wait here to be interrupted.
          return yield* Effect.never
        }
      })

    const context: JobContextApi = {
      jobId: job.id,
      name: job.name,
      queue: job.queue,
      attempt: job.attempts,
      claimToken: token,
      host,
      lease: Effect.sync(() => lease),
      heartbeat: Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        // A fenced or cancelled attempt stops before it renews anything.
        if (!(yield* store.heartbeat(job.id, token, now, leaseExpiresAt(now, job.claimTimeout)))) {
          const which = { jobId: job.id, jobName: job.name, attempt: job.attempts }
          return yield* (yield* store.claimState({ id: job.id, token })) === "cancelled"
            ? new JobCancelled(which)
            : new Fenced(which)
        }
        yield* renewLease(now)
        // The type cap's slot (./typeCap.ts) lives as long as the run; a loss is reported at its release.
        if (slots.cap !== undefined) {
          yield* Effect.ignoreLogged(
            leases.renew({ name: slots.cap, owner: token, expiresAt: leaseExpiresAt(now, job.claimTimeout) })
          )
        }
      })
    }

    const seconds = job.claimTimeout ?? type.timeoutSeconds
    // perform's context is set in the fiber it runs in, which ends with it (../Job.ts `run`).
    const run = registered.run?.(payload, context) ??
      Effect.zipRight(
        FiberRef.set(FiberRef.currentContext, Context.add(services, JobContext, context)),
        registered.perform(payload) as Effect.Effect<void, unknown>
      )
    // A rate slot's period counts from perform's start, checked in perform's own fiber (./rateLimit.ts).
    const started = slots.rate === undefined ? run : Effect.zipRight(rateStart(leases, slots.rate), run)
    const guarded = lost !== undefined ? Effect.raceFirst(started, Deferred.await(lost)) : started
    // perform runs in a fiber of its own, so on timeout we return at once even if it ignores
    // interruption; it may still be running, which is why a timed-out attempt leaves its lease
    // to expire. Its timer is ./watchdog.ts.
    const done = unsafeMakeOneShot<Exit.Exit<unknown, unknown>, never>()
    const fiber = yield* Effect.forkDaemon(guarded)
    // Its end is seen by an observer, a plain callback (an `exit` and a `map` in the fiber were
    // two steps per attempt).
    fiber.addObserver((exit) => done.complete(Exit.succeed(exit)))
    const cancel = yield* timer(
      Duration.seconds(seconds),
      // Built only when late: an error captures a stack trace, too dear to make per attempt.
      Effect.suspend(() => {
        done.complete(Exit.succeed(Exit.fail(new JobTimeoutError({ seconds }))))
        return Fiber.interruptFork(fiber)
      })
    )
    // Interrupted from outside (a stopping worker): wait until perform has stopped, so the
    // attempt can be handed back and its lease released without overlapping it (./handBack.ts).
    // Either way the timer goes. One exit handler for both (each wrapper is steps per attempt),
    // or none where the caller stops what `inFlight` holds when it is interrupted.
    // One rule for stopping it, here or by the caller (`stopPerform`).
    const running: InFlight = inFlight ?? noneInFlight()
    running.fiber = fiber
    running.cancel = cancel
    if (inFlight === undefined) {
      return yield* Effect.onExit(done.await, (exit) =>
        Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause) ? stopPerform(running) : cancel)
    }
    const exit = yield* done.await
    running.fiber = undefined
    yield* cancel
    return exit
  })
