/**
 * Limits changed live (docs/flow-control.md, docs/behaviour.md §19): rows that override a job
 * type's declared limits per type, queue or key, or pause them, without a restart. Every worker
 * reads the rows again at most a second after the last read (src/runtime/worker/liveLimits.ts).
 */
import type { SqlError } from "@effect/sql/SqlError"
import { type Duration, Effect, Either } from "effect"
import { parseDurationMillis } from "../core/duration.ts"
import { LimitInputError } from "../core/errors.ts"
import { type LimitChange, limitChangeProblem, type LimitRow, type LimitScope } from "../core/limits.ts"
import { JobStore } from "../ports/JobStore.ts"

export type { LimitRow, LimitScope } from "../core/limits.ts"

/** What a limits row applies to: exactly one of a job type, a queue or a concurrency key. */
export type LimitTarget =
  | { readonly type: string; readonly queue?: undefined; readonly key?: undefined }
  | { readonly queue: string; readonly type?: undefined; readonly key?: undefined }
  | { readonly key: string; readonly type?: undefined; readonly queue?: undefined }

/**
 * A change to a target's limits. A field left out stays as it is; `null` removes that override
 * (the job type's declaration applies again).
 */
export type LimitSettings = LimitTarget & {
  /** Runs at once per key (a type's keys, or the key). */
  readonly concurrency?: number | null | undefined
  /** Runs at once of the whole type (a type only). */
  readonly typeCap?: number | null | undefined
  /** Starts per period, per key (or per type without a key). */
  readonly rate?: { readonly limit: number; readonly period: Duration.DurationInput } | null | undefined
  /** Holds its jobs pending, none started, while true. */
  readonly paused?: boolean | undefined
  /** Who pauses, shown with the pause. */
  readonly by?: string | undefined
}

const scopeOf = (target: LimitTarget): Either.Either<readonly [LimitScope, string], string> => {
  const given = (["type", "queue", "key"] as const).filter((s) => (target as Record<string, unknown>)[s] !== undefined)
  if (given.length !== 1) return Either.left("name exactly one of type, queue or key")
  const scope = given[0]!
  const value = (target as Record<string, unknown>)[scope]
  return typeof value === "string" ? Either.right([scope, value]) : Either.left(`${scope} must be text`)
}

const changeOf = (settings: LimitSettings): Either.Either<LimitChange, string> =>
  Either.flatMap(scopeOf(settings), ([scope, target]) => {
    let rate: LimitChange["rate"]
    if (settings.rate === null) rate = null
    else if (settings.rate !== undefined) {
      const period = parseDurationMillis(settings.rate.period)
      if (Either.isLeft(period)) return Either.left(`rate period: ${period.left}`)
      rate = { limit: settings.rate.limit, periodMs: period.right }
    }
    const change: LimitChange = {
      scope,
      target,
      concurrency: settings.concurrency,
      typeCap: settings.typeCap,
      rate,
      paused: settings.paused,
      by: settings.by
    }
    const problem = limitChangeProblem(change)
    return problem === undefined ? Either.right(change) : Either.left(problem)
  })

/**
 * Changes a type's, a queue's or a key's limits, or pauses or resumes it, and returns its row.
 * A bad change fails with `LimitInputError` and changes nothing. Lifting a pause makes the jobs it
 * held due at once.
 */
export const set = (settings: LimitSettings): Effect.Effect<LimitRow, LimitInputError | SqlError, JobStore> =>
  Effect.gen(function*() {
    const change = changeOf(settings)
    if (Either.isLeft(change)) return yield* new LimitInputError({ reason: change.left })
    const now = yield* Effect.clockWith((c) => c.currentTimeMillis)
    return yield* (yield* JobStore).changeLimit(change.right, now)
  })

/** Pauses a type, a queue or a key: its jobs stay pending and none starts until `resume`. */
export const pause = (target: LimitTarget, by?: string) => set({ ...target, paused: true, by })

/** Lifts a pause: the jobs it held are due at once. */
export const resume = (target: LimitTarget) => set({ ...target, paused: false })

/** Removes a target's row: its declared limits apply again, and a pause it held is lifted. Whether it had one. */
export const clear = (target: LimitTarget): Effect.Effect<boolean, LimitInputError | SqlError, JobStore> =>
  Effect.gen(function*() {
    const scope = scopeOf(target)
    if (Either.isLeft(scope)) return yield* new LimitInputError({ reason: scope.left })
    const now = yield* Effect.clockWith((c) => c.currentTimeMillis)
    return yield* (yield* JobStore).clearLimit(scope.right[0], scope.right[1], now)
  })

/** Every limits row, by scope and target. */
export const list: Effect.Effect<ReadonlyArray<LimitRow>, SqlError, JobStore> = Effect.flatMap(
  JobStore,
  (store) => store.limits
)
