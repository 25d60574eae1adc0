/** Old path of the SQL machinery, kept while the restructuring moves callers (see docs/architecture.md). */
export * from "./sql/statement.ts"
export * from "./sql/dialect.ts"
export * from "./sql/leaseStatements.ts"
export * from "./sql/jobStatements.ts"
export type { Outcome } from "../core/model.ts"
export { REAPED_DEAD, REAPED_RETRY } from "../core/transitions.ts"
