/**
 * The SQL JobStore's limits changed live (docs/behaviour.md §19): the limits table read whole,
 * a row changed or cleared, and the jobs a lifted pause held woken.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Either, Option } from "effect"
import { applyLimitChange, type LimitRow, pausedWaitName } from "../../../core/limits.ts"
import type { JobStoreApi } from "../../../ports/JobStore.ts"
import { decodeLimitRow } from "../decode.ts"
import { limitStatements } from "../limitStatements.ts"
import { retryTransient } from "../retry.ts"
import type { StoreRunner } from "./runner.ts"
import type { StoreWakeups } from "./wakeups.ts"

/** The SQL JobStore's `limits`, `changeLimit` and `clearLimit` over `runner`. */
export const makeLimits = (
  runner: StoreRunner,
  wakeups: StoreWakeups
): Pick<JobStoreApi, "limits" | "changeLimit" | "clearLimit"> => {
  const { changed, dialect, first, rows, write } = runner
  const statements = limitStatements(dialect.syntax, runner.tables)
  // The jobs a pause held, due now: idle workers here and elsewhere are told.
  const wake = (row: LimitRow | undefined, now: number) =>
    row?.paused === true
      ? Effect.flatMap(
        write(statements.wake(pausedWaitName(row.scope, row.target), now)),
        (n) => (n > 0 ? wakeups.woken : Effect.void)
      )
      : Effect.void

  return {
    limits: Effect.map(rows(statements.all), (r) => r.map(decodeLimitRow)),
    // Read, then update or insert; two changes racing to insert the same row meet the primary
    // key, and the loser reads again and updates.
    changeLimit: (change, now) =>
      retryTransient(
        dialect,
        "change limit",
        Effect.gen(function*() {
          const target = change.target.trim()
          for (let attempt = 0;; attempt++) {
            const current = Option.getOrUndefined(yield* first(statements.one(change.scope, target), decodeLimitRow))
            const row = applyLimitChange(current, change, now)
            if (current !== undefined) {
              yield* changed(statements.update(row))
            } else {
              const inserted = yield* Effect.either(changed(statements.insert(row)))
              if (Either.isLeft(inserted)) {
                if (attempt < 2) continue
                return yield* Effect.fail(inserted.left)
              }
            }
            if (current?.paused === true && !row.paused) yield* wake(current, now)
            return row
          }
        })
      ) as Effect.Effect<LimitRow, SqlError>,
    clearLimit: (scope, target, now) =>
      retryTransient(
        dialect,
        "clear limit",
        Effect.gen(function*() {
          const current = Option.getOrUndefined(yield* first(statements.one(scope, target.trim()), decodeLimitRow))
          if (current === undefined) return false
          yield* changed(statements.remove(scope, current.target))
          yield* wake(current, now)
          return true
        })
      )
  }
}
