/**
 * LeaseLock as the package exports it (`import { LeaseLock } from "leasehold"`, or
 * "leasehold/lease-lock"): a named, expiring, owner-fenced lock in a table of your own database
 * (docs/behaviour.md §2), usable without the job system.
 */
export {
  type AcquireInput,
  type LeaseError,
  type LeaseExpiry,
  LeaseLock,
  type LeaseLockApi,
  type ReleaseInput,
  type RenewInput
} from "./ports/LeaseLock.ts"
export { layer, make } from "./adapters/sql/LeaseLock.ts"
export type { LeaseRow } from "./core/lease.ts"
export { LeaseInputError, LeaseTableInTransactionError } from "./core/errors.ts"
