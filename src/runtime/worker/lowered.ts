/**
 * A limit lowered live below what a job type declares (docs/behaviour.md §19): the attempts
 * already running on the slots above the new limit finish, and no attempt starts until they
 * have, so the number running falls to the new limit and stays under it. An attempt that holds
 * a slot below the limit while one above it is still held gives back what it took and waits on
 * the limit's name, which every release of a slot hands off to (./slots.ts).
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Either, Option } from "effect"
import { busyDelaySeconds, isExpired, type LeaseRow } from "../../core/lease.ts"
import type { JobLeases, JobStore } from "../../ports/JobStore.ts"
import type { Attempt, Steps } from "./attemptState.ts"
import { deferClaimed } from "./outcome.ts"
import type { ProcessResult } from "./results.ts"

/**
 * Whether the slots `above` (a lowered limit's, from its new limit up to the declared one) are
 * all free or this attempt's own (right); else the attempt's result (left): `giveBack` run, and
 * the job deferred, waiting on `waitOn`, until the first of them should free.
 */
export function* waitForLowered(
  a: Attempt,
  above: ReadonlyArray<string>,
  waitOn: string,
  giveBack: Effect.Effect<void, never, JobStore | JobLeases>
): Steps<Either.Either<void, ProcessResult>, SqlError, JobStore | JobLeases> {
  if (above.length === 0) return Either.right(undefined)
  const now = a.clock.unsafeCurrentTimeMillis()
  const rows = yield* Effect.forEach(above, (name) => Effect.orElseSucceed(a.leases.read(name), () => Option.none()))
  const held = rows.flatMap((r): Array<LeaseRow> =>
    Option.isSome(r) && !isExpired(r.value.expiresAt, now) && r.value.owner !== a.token ? [r.value] : []
  )
  if (held.length === 0) return Either.right(undefined)
  const first = held.reduce((soonest, row) => (row.expiresAt < soonest.expiresAt ? row : soonest))
  yield* giveBack
  const retryAt = now + busyDelaySeconds(first.expiresAt, now) * 1000
  yield* Effect.logDebug(`limit of ${waitOn} lowered; ${held.length} still running above it`)
  return Either.left(yield* deferClaimed(a.job, now, retryAt, waitOn, first.owner))
}
