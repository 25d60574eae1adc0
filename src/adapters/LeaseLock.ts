/** Old path of the LeaseLock pieces, kept while the restructuring moves callers (see docs/architecture.md). */
export * from "../ports/LeaseLock.ts"
export * from "./leaseInput.ts"
export { layer, make } from "./sql/LeaseLock.ts"
export { decodeLeaseRow } from "./sql/decode.ts"
export { inTransaction } from "./sql/transaction.ts"
