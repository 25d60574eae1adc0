/**
 * The job lease table as the `JobLeases` service: a LeaseLock whose `ensureTable` asks the
 * catalog only until it has seen the table once. An exclusive attempt ensures the table before
 * taking its lease; remembered per service instance (one per layer), that costs one catalog
 * query per table for the life of the store rather than one per attempt. A failed or refused
 * ensure (no table, or inside a transaction) is not remembered and is tried again next time.
 */
import { Effect } from "effect"
import type { LeaseLockApi } from "../ports/LeaseLock.ts"

/** `lock` with an `ensureTable` that remembers its first success. */
export const rememberingTable = (lock: LeaseLockApi): LeaseLockApi => {
  let known = false
  return {
    ...lock,
    ensureTable: Effect.suspend(() =>
      known ? Effect.void : Effect.tap(lock.ensureTable, () => Effect.sync(() => (known = true)))
    )
  }
}
