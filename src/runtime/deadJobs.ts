/**
 * Dead jobs by filter (docs/behaviour.md §12): put back to pending or discard every dead job
 * (failed, or interrupted) that matches a filter, in bounded batches, rather than one id at a
 * time; cancelled jobs too when the filter asks for them (by status, or by id). Re-exported by
 * ./Job.ts as `Job.retryDead` and `Job.discardDead`.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Clock, type Duration, Effect, Either } from "effect"
import { parseDurationMillis } from "../core/duration.ts"
import { JobFilterError } from "../core/errors.ts"
import { MAX_NAME_LENGTH } from "../core/jobs.ts"
import type { DeadJobFilter, DeadStatus, EndedStatus } from "../core/model.ts"
import { JobStore, type JobStoreApi } from "../ports/JobStore.ts"

/** The dead statuses, in the order they are listed: what a filter takes when it names no status and no ids. */
export const DEAD_STATUSES: ReadonlyArray<DeadStatus> = ["failed", "interrupted"]

/** Every status a filter may name: the dead ones, and cancelled. A filter by ids takes all three. */
export const ENDED_STATUSES: ReadonlyArray<EndedStatus> = [...DEAD_STATUSES, "cancelled"]

/** Rows one statement retries or discards: a batch holds its row locks only this long. */
export const DEAD_BATCH = 500

/** Most ids one filter may list (each is a bound parameter). */
export const MAX_FILTER_IDS = 1000

/** Which dead jobs to retry or discard: those matching every field given (none given: all). */
export interface DeadJobsFilter {
  /** Only these jobs (at most 1,000 ids); without a `status`, cancelled ones among them too. */
  readonly ids?: ReadonlyArray<string> | undefined
  /** Only jobs of this type. */
  readonly name?: string | undefined
  readonly queue?: string | undefined
  /**
   * `failed` (retries used up), `interrupted` (reaped, not idempotent) or `cancelled`; default
   * failed and interrupted, and cancelled too when `ids` are given (naming a job is deliberate).
   */
  readonly status?: EndedStatus | undefined
  /** Only jobs that died (or were cancelled) at least this long ago (default 0: every one). */
  readonly olderThan?: Duration.DurationInput | undefined
}

const refuse = (field: string, reason: string) => Effect.fail(new JobFilterError({ field, reason }))

const text = (field: string, value: unknown): Effect.Effect<string | undefined, JobFilterError> =>
  value === undefined
    ? Effect.succeed(undefined)
    : typeof value === "string" && value.length > 0 && value.length <= MAX_NAME_LENGTH
    ? Effect.succeed(value)
    : refuse(field, `must be text of 1 to ${MAX_NAME_LENGTH} characters, got ${JSON.stringify(value)}`)

/** The filter checked and resolved at `now`; a bad field fails with `JobFilterError`. */
export const resolveDeadFilter = (f: DeadJobsFilter, now: number): Effect.Effect<DeadJobFilter, JobFilterError> =>
  Effect.gen(function*() {
    const name = yield* text("name", f.name)
    const queue = yield* text("queue", f.queue)
    if (f.status !== undefined && !ENDED_STATUSES.includes(f.status)) {
      return yield* refuse("status", `must be one of ${ENDED_STATUSES.join(", ")}, got ${String(f.status)}`)
    }
    if (f.ids !== undefined) {
      if (!Array.isArray(f.ids) || f.ids.length > MAX_FILTER_IDS) {
        return yield* refuse("ids", `must be a list of at most ${MAX_FILTER_IDS} ids`)
      }
      if (f.ids.some((id) => typeof id !== "string" || id.length === 0 || id.length > 36)) {
        return yield* refuse("ids", "every id must be text of 1 to 36 characters")
      }
    }
    const age = f.olderThan === undefined ? Either.right(0) : parseDurationMillis(f.olderThan)
    if (Either.isLeft(age)) return yield* refuse("olderThan", age.left)
    return {
      ids: f.ids,
      name,
      queue,
      statuses: f.status !== undefined ? [f.status] : f.ids === undefined ? DEAD_STATUSES : ENDED_STATUSES,
      diedBefore: now - Math.ceil(age.right)
    }
  })

// Runs `batch` until a batch takes fewer than `DEAD_BATCH` rows (an empty list of ids takes none).
// A job that died after the call began is left alone (`diedBefore` ≤ now), so the loop ends
// even while workers keep killing jobs.
const batches = (
  f: DeadJobsFilter,
  batch: (store: JobStoreApi, filter: DeadJobFilter, now: number) => Effect.Effect<number, SqlError>
): Effect.Effect<number, SqlError | JobFilterError, JobStore> =>
  Effect.gen(function*() {
    const store = yield* JobStore
    const now = yield* Clock.currentTimeMillis
    const filter = yield* resolveDeadFilter(f, now)
    if (filter.ids?.length === 0) return 0
    let total = 0
    for (;;) {
      const n = yield* batch(store, filter, now)
      total += n
      if (n < DEAD_BATCH) return total
    }
  })

/**
 * Puts every dead job matching `filter` back to pending, due now, with fresh attempts (its
 * history is kept); how many. In batches of `DEAD_BATCH` rows, longest dead first. A cancelled
 * job is taken only when the filter names it (`status: "cancelled"`, or its id).
 */
export const retryDead = (filter: DeadJobsFilter = {}): Effect.Effect<number, SqlError | JobFilterError, JobStore> =>
  batches(filter, (store, f, now) => store.retryDeadWhere(f, now, DEAD_BATCH))

/**
 * Deletes every dead job matching `filter`; how many. In batches of `DEAD_BATCH` rows, longest
 * dead first; cancelled ones as `retryDead` takes them.
 */
export const discardDead = (filter: DeadJobsFilter = {}): Effect.Effect<number, SqlError | JobFilterError, JobStore> =>
  batches(filter, (store, f) => store.discardDeadWhere(f, DEAD_BATCH))
