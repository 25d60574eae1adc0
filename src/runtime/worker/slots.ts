/**
 * Lease slots (docs/behaviour.md §8, "Limit N"): a key whose job type sets `concurrencyLimit: N`
 * has N leases, `slotLeaseName(key, 0 … N − 1)` (src/core/lease.ts); an attempt runs while it
 * holds any one of them. Each slot is an ordinary lease, taken atomically, so N slots can never
 * have more than N holders, and each holder has its own fencing token. Slot 0 is the key's own
 * lease name, so N = 1 is the exclusive lease, statement for statement.
 *
 * A job that finds every slot busy waits on the key's own name (`lease_name`), as with N = 1; a
 * run that releases slot 1 or above hands off to that name itself, since the store's release
 * hands off to the released name only.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Option } from "effect"
import { isExpired, type LeaseRow, slotLeaseName } from "../../core/lease.ts"
import type { LeaseError, LeaseLockApi } from "../../ports/LeaseLock.ts"

/** The lease names of a key's slots, slot 0 (the key's own name) first. */
export const slotNames = (leaseName: string, limit: number): ReadonlyArray<string> =>
  Array.from({ length: limit }, (_, slot) => slotLeaseName(leaseName, slot))

/** A slot taken: its lease name and this acquisition's fencing token. */
export interface TakenSlot {
  readonly name: string
  readonly token: bigint
}

/** Takes the first free (or expired, or already ours) slot, in slot order; none when all are busy. */
export const takeSlot = (
  leases: LeaseLockApi,
  names: ReadonlyArray<string>,
  input: { readonly owner: string; readonly host: string; readonly now: number; readonly expiresAt: number }
): Effect.Effect<Option.Option<TakenSlot>, LeaseError> =>
  Effect.gen(function*() {
    for (const name of names) {
      const token = yield* leases.tryAcquireToken({ name, ...input })
      if (Option.isSome(token)) return Option.some({ name, token: token.value })
    }
    return Option.none()
  })

/** The holder whose slot frees first (none when a slot turned free meanwhile or cannot be read). */
export const firstToFree = (
  leases: LeaseLockApi,
  names: ReadonlyArray<string>
): Effect.Effect<Option.Option<LeaseRow>> =>
  Effect.map(
    Effect.forEach(names, (name) => Effect.orElseSucceed(leases.read(name), () => Option.none<LeaseRow>())),
    (rows) => {
      if (rows.some(Option.isNone)) return Option.none()
      const held = rows.flatMap((r) => (Option.isSome(r) ? [r.value] : []))
      return Option.fromNullable(held.reduce<LeaseRow | undefined>(
        (soonest, row) => (soonest === undefined || row.expiresAt < soonest.expiresAt ? row : soonest),
        undefined
      ))
    }
  )

/** Whether some slot is free or expired at `now` (a hand-off may then be due). */
export const anySlotFree = (
  leases: LeaseLockApi,
  names: ReadonlyArray<string>,
  now: number
): Effect.Effect<boolean, SqlError> =>
  Effect.map(
    Effect.forEach(names, (name) => Effect.orElseSucceed(leases.read(name), () => Option.none<LeaseRow>())),
    (rows) => rows.some((r) => Option.isNone(r) || isExpired(r.value.expiresAt, now))
  )
