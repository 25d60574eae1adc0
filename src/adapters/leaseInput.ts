/**
 * Input checks every LeaseLock store runs before touching its table (docs/behaviour.md §2), so
 * the SQL stores and the in-memory model refuse exactly the same input with the same error.
 */
import { Clock, Effect } from "effect"
import { LeaseInputError } from "../core/errors.ts"
import { leaseInputProblem, type LeaseRow } from "../core/lease.ts"
import type { AcquireInput, LeaseExpiry, ReleaseInput } from "../ports/LeaseLock.ts"

/** Checks name, owner and host against what the table can hold. */
export const validateLease = (
  input: { readonly name: string; readonly owner?: string; readonly host?: string | null | undefined }
): Effect.Effect<void, LeaseInputError> => {
  const problem = leaseInputProblem("name", input.name) ??
    (input.owner === undefined ? undefined : leaseInputProblem("owner", input.owner)) ??
    (input.host === undefined || input.host === null ? undefined : leaseInputProblem("host", input.host))
  if (problem === undefined) return Effect.void
  const field = problem.startsWith("lease name") ? "name" : problem.startsWith("lease owner") ? "owner" : "host"
  return Effect.fail(new LeaseInputError({ field, reason: problem }))
}

/**
 * Resolves `expiresAt` from an absolute expiry or a TTL. Refuses a value that is not a whole
 * epoch-ms value, and a negative TTL or an expiry before `now` (the lease would be written
 * expired already); a TTL of 0 (expiring exactly at `now`) is allowed.
 */
export const resolveExpiry = (expiry: LeaseExpiry, now: number): Effect.Effect<number, LeaseInputError> => {
  if ("ttlMs" in expiry && expiry.ttlMs < 0) {
    return Effect.fail(
      new LeaseInputError({
        field: "expiresAt",
        reason: `ttlMs ${expiry.ttlMs} is negative: the lease would be expired already`
      })
    )
  }
  const at = "expiresAt" in expiry ? expiry.expiresAt : now + expiry.ttlMs
  if (!Number.isSafeInteger(at)) {
    return Effect.fail(new LeaseInputError({ field: "expiresAt", reason: `not a whole epoch-ms value: ${at}` }))
  }
  if (at < now) {
    return Effect.fail(
      new LeaseInputError({
        field: "expiresAt",
        reason: `${at} is before now (${now}): the lease would be expired already`
      })
    )
  }
  return Effect.succeed(at)
}

/** Validates an acquire and builds the row it would write, with `now` from the caller or the Clock. */
export const acquireRow = (input: AcquireInput): Effect.Effect<LeaseRow, LeaseInputError> =>
  Effect.gen(function*() {
    yield* validateLease(input)
    const now = yield* nowOr(input.now)
    return {
      name: input.name,
      owner: input.owner,
      host: input.host ?? null,
      acquiredAt: now,
      expiresAt: yield* resolveExpiry(input, now)
    }
  })

/** `now` from the caller (a whole epoch-ms value, else `LeaseInputError`), or from Effect's Clock. */
export const nowOr = (now: number | undefined): Effect.Effect<number, LeaseInputError> =>
  now === undefined
    ? Clock.currentTimeMillis
    : Number.isSafeInteger(now)
    ? Effect.succeed(now)
    : Effect.fail(new LeaseInputError({ field: "now", reason: `not a whole epoch-ms value: ${now}` }))

/** Checks a release: name and owner as `validateLease`, and `expiredBefore` a whole epoch-ms value. */
export const validateRelease = (input: ReleaseInput): Effect.Effect<void, LeaseInputError> =>
  Effect.zipRight(
    validateLease(input),
    input.expiredBefore === undefined || Number.isSafeInteger(input.expiredBefore)
      ? Effect.void
      : Effect.fail(
        new LeaseInputError({ field: "expiredBefore", reason: `not a whole epoch-ms value: ${input.expiredBefore}` })
      )
  )
