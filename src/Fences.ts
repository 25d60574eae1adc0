/**
 * Fences as the package exports it (`import { Fences } from "leasehold"`): guarded writes that
 * refuse a stale lease holder's write by its fencing token (docs/behaviour.md §2, "Fencing
 * tokens"), in a table of your own database.
 */
export { Fences, type FencesApi, type GuardInput } from "./ports/Fences.ts"
export { layer, make } from "./adapters/sql/Fences.ts"
export { FenceInputError, LeaseTableInTransactionError, StaleTokenError } from "./core/errors.ts"
