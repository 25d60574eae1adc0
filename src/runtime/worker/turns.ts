/**
 * The worker's turns (docs/behaviour.md §5, §7, §9): reap, claim and run one job (processNext),
 * loop that (processQueue), and one scheduled run for cron-style hosting (tick), which also
 * enqueues due recurring jobs. Each entry point
 * checks its options once and passes them down.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Clock, Effect, FiberRef, Option } from "effect"
import { randomUUID } from "node:crypto"
import type { WorkerConfigError } from "../../core/errors.ts"
import { countsTowardLimit, decideReap, DEFAULT_BACKOFF, emptyTally, type QueueTally } from "../../core/jobs.ts"
import type { ClaimInput } from "../../core/model.ts"
import { JobStore } from "../../ports/JobStore.ts"
import { Jobs } from "../Job.ts"
import { recordReaped } from "../metrics.ts"
import { attemptAnnotations, runClaimed, type WorkerServices } from "./attempt.ts"
import { drainState, touchHost } from "./hosts.ts"
import {
  count,
  type ProcessOptions,
  type ProcessQueueOptions,
  type Resolved,
  resolve,
  type TickOptions,
  timeBudget
} from "./options.ts"
import { emptyTick, ProcessResult, tallyOf, tickOf, type TickResult } from "./results.ts"
import { enqueueDue } from "./scheduler.ts"

/**
 * One pass of the scheduler (./scheduler.ts) for tick: how many jobs it enqueued. A failure is
 * logged, as the long-running worker's scheduler logs it; the next tick tries again.
 */
const dueSchedules: Effect.Effect<number, never, WorkerServices> = enqueueDue.pipe(
  Effect.map((outcomes) => outcomes.filter((s) => s._tag === "Enqueued").length),
  Effect.catchAll((error) => Effect.as(Effect.logWarning(`schedules: ${error.message}; the next tick tries again`), 0))
)

/** Reaps stale rows with checked options; returns how many this call reaped. */
export const reapWith = (o: Resolved): Effect.Effect<number, SqlError, JobStore | Jobs> =>
  Effect.gen(function*() {
    const store = yield* JobStore
    const jobs = yield* Jobs
    const now = yield* Clock.currentTimeMillis
    let reaped = 0
    for (const row of yield* store.stale(now, o.reapLimit)) {
      const type = Option.map(jobs.get(row.name), (r) => r.type)
      const decision = decideReap(row, {
        idempotent: Option.match(type, { onNone: () => true, onSome: (t) => t.idempotent }),
        backoff: Option.match(type, { onNone: () => DEFAULT_BACKOFF, onSome: (t) => t.backoff })
      }, now)
      if (yield* store.reap(row, decision, now)) {
        reaped++
        recordReaped(row.name, row.queue)
        yield* Effect.logWarning(
          `reaped ${row.name} ${row.id}: no sign of life from ${row.claimedBy ?? "?"}; ${decision._tag}`
        ).pipe(
          Effect.locallyWith(FiberRef.currentLogAnnotations, (base) => attemptAnnotations(base, row))
        )
      }
    }
    return reaped
  })

/**
 * Reaps stale processing rows: an idempotent type's go back to pending (or dead when retries are
 * used up); a non-idempotent type's are marked interrupted. Returns how many this call reaped.
 */
export const reap = (
  options: ProcessOptions = {}
): Effect.Effect<number, SqlError | WorkerConfigError, JobStore | Jobs> => Effect.flatMap(resolve(options), reapWith)

/** What a claim by this worker asks for at `now`, with a fresh claim token. */
export const claimInputAt = (o: Resolved, now: number): ClaimInput => ({
  queues: o.queues,
  host: o.host,
  now,
  claimToken: randomUUID(),
  timeoutCap: o.timeoutCap,
  hostCap: o.hostCap
})

/** What a claim by this worker asks for, now, with a fresh claim token. */
export const claimInput = (o: Resolved): Effect.Effect<ClaimInput> =>
  // The Clock read in place: two steps, not four, per claim.
  Effect.clockWith((clock) => Effect.succeed(claimInputAt(o, clock.unsafeCurrentTimeMillis())))

/** Claims one due job and runs it. */
export const claimThenRun = (o: Resolved): Effect.Effect<ProcessResult, SqlError, WorkerServices> =>
  Effect.gen(function*() {
    const store = yield* JobStore
    const claimed = yield* store.claim(yield* claimInput(o))
    switch (claimed._tag) {
      case "NothingDue":
        return ProcessResult.Idle()
      case "Capped":
        return ProcessResult.Capped({ running: claimed.running })
      case "Claimed":
        return yield* runClaimed(claimed.job, o)
    }
  })

/** Claims one due job and runs it (no reap, no drain check). */
export const claimAndRun = (
  options: ProcessOptions = {}
): Effect.Effect<ProcessResult, SqlError | WorkerConfigError, WorkerServices> =>
  Effect.gen(function*() {
    const o = yield* resolve(options)
    return yield* claimThenRun(o)
  })

// processNext with checked options, for processQueue's loop.
const nextTurn = (o: Resolved): Effect.Effect<ProcessResult, SqlError, WorkerServices> =>
  Effect.gen(function*() {
    const store = yield* JobStore
    const draining = yield* drainState(store, o.host, yield* Clock.currentTimeMillis)
    yield* reapWith(o)
    if (Option.isSome(draining)) return ProcessResult.Draining({ until: draining.value })
    return yield* claimThenRun(o)
  })

/**
 * One turn of the worker: reap, then (unless this host is draining) claim and run one job.
 * Never fails for a job's sake: bad payloads, unknown types and perform errors become outcomes.
 */
export const processNext = (
  options: ProcessOptions = {}
): Effect.Effect<ProcessResult, SqlError | WorkerConfigError, WorkerServices> =>
  Effect.gen(function*() {
    const o = yield* resolve(options)
    return yield* nextTurn(o)
  })

/**
 * Runs processNext until `limit` attempts were processed, failed or fenced, nothing is due, the
 * `timeout` has passed, or the host is capped or draining. Deferred jobs count as skipped, not
 * toward the limit; the loop still ends because a deferred job's run_at moves into the future.
 */
export const processQueue = (
  options: ProcessQueueOptions = {}
): Effect.Effect<QueueTally, SqlError | WorkerConfigError, WorkerServices> =>
  Effect.gen(function*() {
    const limit = yield* count("limit", options.limit ?? 10)
    const budget = yield* timeBudget(options.timeout)
    const o = yield* resolve({ ...options, queues: options.queue === undefined ? undefined : [options.queue] })
    const started = yield* Clock.currentTimeMillis
    let tally = emptyTally
    let counted = 0
    while (limit === 0 || counted < limit) {
      if ((yield* Clock.currentTimeMillis) - started >= budget) break
      const result = yield* nextTurn(o)
      if (result._tag === "Idle" || result._tag === "Capped" || result._tag === "Draining") break
      tally = tallyOf(tally, result)
      if (countsTowardLimit(result._tag)) counted++
    }
    return tally
  })

/**
 * One scheduled run (for cron-style hosting): refresh the host row, reap, enqueue the recurring
 * jobs whose slot is due (`Schedules.enqueueDue`: an app that only ticks has no scheduler fiber;
 * a failed pass is logged and the tick goes on), process up to `maxJobs` attempts (a whole
 * number ≥ 0, default 10; deferrals do not count), refresh the host row again.
 */
export const tick = (
  options: TickOptions = {}
): Effect.Effect<TickResult, SqlError | WorkerConfigError, WorkerServices> =>
  Effect.gen(function*() {
    const o = yield* resolve(options)
    const maxJobs = yield* count("maxJobs", options.maxJobs ?? 10)
    const store = yield* JobStore
    const touch = touchHost(store, o, options.codeVersion)
    yield* touch
    let result = emptyTick(o.host, yield* reapWith(o))
    result = { ...result, scheduled: yield* dueSchedules }
    const draining = yield* drainState(store, o.host, yield* Clock.currentTimeMillis)
    if (Option.isSome(draining)) {
      result = { ...result, draining: true }
    } else {
      let counted = 0
      while (counted < maxJobs) {
        const r = yield* claimThenRun(o)
        if (r._tag === "Idle") break
        result = tickOf(result, r)
        if (r._tag === "Capped") break
        if (countsTowardLimit(r._tag)) counted++
      }
    }
    yield* touch
    return result
  })
