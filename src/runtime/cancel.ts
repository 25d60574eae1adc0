/**
 * Cancelling jobs (docs/behaviour.md §15): one by id (`cancel`), or every unfinished job of a
 * type, queue or status (`cancelWhere`). Exported as `Job.cancel` and `Job.cancelWhere`; the
 * Promise API, the CLI (`leasehold jobs cancel`) and apps' own admin screens call these.
 *
 * A pending job is cancelled at once and never runs. A processing one is cancelled in the
 * database at once too, and its attempt stops cooperatively: a claimed job a worker has not
 * started is checked before it starts and never runs, and a running perform learns of it at its
 * next heartbeat, which fails with `JobCancelled`. The cancel itself records the attempt in the
 * job's history (outcome `cancelled`); the attempt then ends `cancelled`, recording nothing else,
 * and its lease is released and handed off. `Job.retryDead` puts a cancelled job back when its
 * filter names it (./deadJobs.ts).
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Clock, Effect, Option } from "effect"
import { CancelFilterError, JobNotCancellableError, JobNotFoundError } from "../core/errors.ts"
import { CANCELLABLE_STATUSES, MAX_NAME_LENGTH } from "../core/jobs.ts"
import type { CancelFilter } from "../core/model.ts"
import { JobStore } from "../ports/JobStore.ts"

/** What `cancel` did. */
export interface CancelResult {
  readonly id: string
  readonly status: "cancelled"
  /**
   * Whether the job was processing (claimed or running): its attempt stops before it starts or
   * at its next heartbeat, and releases its lease then.
   */
  readonly wasRunning: boolean
}

/** Which unfinished jobs `cancelWhere` cancels: those matching every field given (at least one). */
export interface CancelWhere {
  /** The job type's name. */
  readonly name?: string | undefined
  readonly queue?: string | undefined
  /** Only pending or only processing jobs (default: both). */
  readonly status?: "pending" | "processing" | undefined
}

const FILTER_FIELDS = ["name", "queue", "status"] as const

/**
 * Cancels one job. Fails with `JobNotFoundError` when there is none with this id, and with
 * `JobNotCancellableError` when it has finished (completed, failed, interrupted, or already
 * cancelled); either way nothing changes.
 */
export const cancel = (
  id: string
): Effect.Effect<CancelResult, JobNotFoundError | JobNotCancellableError | SqlError, JobStore> =>
  Effect.gen(function*() {
    const store = yield* JobStore
    const status = (found: Option.Option<{ readonly status: string }>) =>
      Option.isNone(found)
        ? Effect.fail(new JobNotFoundError({ jobId: String(id) }))
        : Effect.succeed(found.value.status)
    if (typeof id !== "string" || id === "") return yield* new JobNotFoundError({ jobId: String(id) })
    const before = yield* status(yield* store.get(id))
    if (before === "pending" || before === "processing") {
      if ((yield* store.cancel({ id }, yield* Clock.currentTimeMillis)) > 0) {
        return { id, status: "cancelled", wasRunning: before === "processing" } as const
      }
    }
    // Finished, or it finished between the read and the cancel.
    return yield* new JobNotCancellableError({ jobId: id, status: yield* status(yield* store.get(id)) })
  })

/** Why `filter` cannot be used to cancel, or undefined when it can. */
const filterProblem = (filter: CancelWhere): CancelFilterError | undefined => {
  if (typeof filter !== "object" || filter === null) {
    return new CancelFilterError({ field: "filter", reason: "must be an object" })
  }
  const unknown = Object.keys(filter).find((k) => !(FILTER_FIELDS as ReadonlyArray<string>).includes(k))
  if (unknown !== undefined) {
    return new CancelFilterError({ field: unknown, reason: `is not a filter field (use ${FILTER_FIELDS.join(", ")})` })
  }
  const given = FILTER_FIELDS.filter((k) => filter[k] !== undefined)
  if (given.length === 0) {
    return new CancelFilterError({
      field: "filter",
      reason: `give at least one of ${FILTER_FIELDS.join(", ")}`
    })
  }
  for (const field of ["name", "queue"] as const) {
    const value = filter[field]
    if (value !== undefined && (typeof value !== "string" || value === "" || value.length > MAX_NAME_LENGTH)) {
      return new CancelFilterError({ field, reason: `must be 1 to ${MAX_NAME_LENGTH} characters` })
    }
  }
  if (filter.status !== undefined && !(CANCELLABLE_STATUSES as ReadonlyArray<unknown>).includes(filter.status)) {
    return new CancelFilterError({
      field: "status",
      reason: `must be pending or processing (only unfinished jobs can be cancelled), got ${String(filter.status)}`
    })
  }
  return undefined
}

/**
 * Cancels every unfinished job matching `filter`, in one statement, and says how many. A filter
 * with no field, an unknown field, a status other than pending or processing, or a blank name or
 * queue fails with `CancelFilterError` and cancels nothing.
 */
export const cancelWhere = (
  filter: CancelWhere
): Effect.Effect<{ readonly cancelled: number }, CancelFilterError | SqlError, JobStore> =>
  Effect.gen(function*() {
    const problem = filterProblem(filter)
    if (problem !== undefined) return yield* problem
    const where: CancelFilter = { name: filter.name, queue: filter.queue, status: filter.status }
    const cancelled = yield* (yield* JobStore).cancel(where, yield* Clock.currentTimeMillis)
    return { cancelled }
  })
