/**
 * Enqueue (docs/behaviour.md §4): one job (`enqueue`) or many in one transaction
 * (`enqueueMany`), each checked first (./prepare.ts), then inserted, and this process's idle
 * workers woken when a job is due now.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Clock, Context, Effect, Either } from "effect"
import { EnqueueInputError, PayloadError } from "../../core/errors.ts"
import type { NewJob } from "../../core/model.ts"
import { type InsertResult, JobStore, type JobStoreApi } from "../../ports/JobStore.ts"
import { annotateEnqueue, withEnqueueSpan } from "../tracing.ts"
import type { JobType } from "./define.ts"
import { type EnqueueOptions, prepare } from "./prepare.ts"

/** What enqueue did. */
export interface EnqueueResult {
  readonly id: string
  readonly status: "pending" | "duplicate"
  readonly duplicate: boolean
}

/** Options of `enqueueMany`: those of `enqueue`, for every job, with a unique key per payload. */
export interface EnqueueManyOptions<A> extends Omit<EnqueueOptions, "uniqueKey"> {
  /** The unique key of each job, from its payload and its index (none when undefined). */
  readonly uniqueKey?: ((payload: A, index: number) => string | undefined) | undefined
}

/** A payload of `enqueueMany` whose unique key was taken. */
export interface EnqueueDuplicate {
  /** Its index in the payloads. */
  readonly index: number
  readonly uniqueKey: string
  /** The id of the job holding the key (an earlier payload's own, when two shared a key). */
  readonly id: string
}

/** What enqueueMany did. */
export interface EnqueueManyResult {
  /** One per payload, in order. */
  readonly jobs: ReadonlyArray<EnqueueResult>
  /** How many jobs were written. */
  readonly inserted: number
  /** The payloads whose unique key was taken, in order. */
  readonly duplicates: ReadonlyArray<EnqueueDuplicate>
}

const inputError = (field: string, reason: string) => Effect.fail(new EnqueueInputError({ field, reason }))

// The store and the Clock's time, read off the fiber in one step rather than several as effects:
// an enqueue is on the path of every job's latency. The store rings this process's workers for a
// job due now (JobStoreApi `wakeups`).
const storeAndNow = Effect.withFiberRuntime((fiber) =>
  Effect.succeed({
    store: Context.get(fiber.currentContext as Context.Context<JobStore>, JobStore),
    now: Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis()
  })
) as Effect.Effect<{ readonly store: JobStoreApi; readonly now: number }, never, JobStore>

const asResult = (r: InsertResult): EnqueueResult => ({
  id: r.id,
  status: r.duplicate ? "duplicate" : "pending",
  duplicate: r.duplicate
})

/**
 * Enqueues a job. The payload is validated and encoded with the type's Schema, and must decode
 * again from the JSON that is stored (NaN, for one, cannot: JSON has no form for it); a bad
 * payload fails with `PayloadError`, a bad option (or a concurrency key the lock table cannot
 * hold) with `EnqueueInputError`, and nothing is written. Inside `sql.withTransaction` the insert
 * joins the caller's transaction. A taken unique key returns the existing job's id.
 */
export const enqueue = <A, I, R>(
  type: JobType<string, A, I, R>,
  payload: A,
  options: EnqueueOptions = {}
): Effect.Effect<EnqueueResult, PayloadError | EnqueueInputError | SqlError, JobStore> =>
  withEnqueueSpan(type.name, options.queue ?? type.queue, (traceContext) =>
    Effect.gen(function*() {
      const { now, store } = yield* storeAndNow
      const job = yield* prepare(type, payload, options, now, traceContext)
      const result = yield* store.insert(job)
      if (traceContext !== undefined) yield* annotateEnqueue("leasehold.job.id", result.id)
      return asResult(result)
    }))

/**
 * Enqueues one job per payload, as `enqueue` would, in one transaction (the caller's inside
 * `sql.withTransaction`) with one INSERT per 1,000 jobs. Every payload and option is checked
 * first: one bad payload fails the call with `PayloadError` (its reason names the index) or
 * `EnqueueInputError`, and nothing is written. Unique keys are honoured per job: a payload
 * whose key is taken — by an existing job, or by an earlier payload of the same call — writes
 * nothing and is reported in `duplicates` with the holder's id.
 */
export const enqueueMany = <A, I, R>(
  type: JobType<string, A, I, R>,
  payloads: Iterable<A>,
  options: EnqueueManyOptions<A> = {}
): Effect.Effect<EnqueueManyResult, PayloadError | EnqueueInputError | SqlError, JobStore> =>
  withEnqueueSpan(
    type.name,
    options.queue ?? type.queue,
    (traceContext) => enqueueAll(type, payloads, options, traceContext)
  )

const enqueueAll = <A, I, R>(
  type: JobType<string, A, I, R>,
  payloads: Iterable<A>,
  options: EnqueueManyOptions<A>,
  traceContext: string | undefined
): Effect.Effect<EnqueueManyResult, PayloadError | EnqueueInputError | SqlError, JobStore> =>
  Effect.gen(function*() {
    const { now, store } = yield* storeAndNow
    if (payloads === null || typeof payloads !== "object" || !(Symbol.iterator in payloads)) {
      return yield* inputError("payloads", "must be an array (or another iterable) of payloads")
    }
    const keyOf = options.uniqueKey
    if (keyOf !== undefined && typeof keyOf !== "function") {
      return yield* inputError("uniqueKey", "must be a function of the payload and its index")
    }
    const at = (index: number) => `payloads[${index}]: `
    // Plain loop over Eithers: a payload costs no fiber of its own, however many there are.
    const jobs: Array<NewJob> = []
    let index = 0
    for (const payload of payloads) {
      const i = index++
      let uniqueKey: string | undefined
      try {
        uniqueKey = keyOf?.(payload, i)
      } catch (e) {
        return yield* inputError("uniqueKey", `${at(i)}the function threw: ${String(e)}`)
      }
      const job = prepare(type, payload, { ...options, uniqueKey }, now, traceContext)
      if (Either.isRight(job)) {
        jobs.push(job.right)
        continue
      }
      // Options shared by every payload fail the same way for each: only a payload's own
      // problems name it.
      const e = job.left
      return yield* Effect.fail(
        e._tag === "PayloadError"
          ? new PayloadError({ jobName: e.jobName, reason: at(i) + e.reason })
          : e.field === "uniqueKey" || e.field === "concurrencyKey"
          ? new EnqueueInputError({ field: e.field, reason: at(i) + e.reason })
          : e
      )
    }
    const results = yield* store.insertMany(jobs)
    const written = jobs.filter((_, i) => !results[i]!.duplicate)
    if (traceContext !== undefined) yield* annotateEnqueue("leasehold.job.count", written.length)
    return {
      jobs: results.map(asResult),
      inserted: written.length,
      duplicates: results.flatMap((r, index) =>
        r.duplicate ? [{ index, uniqueKey: jobs[index]!.uniqueKey, id: r.id }] : []
      )
    }
  })
