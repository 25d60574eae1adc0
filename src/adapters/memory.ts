/** Old path of the in-memory store, kept while the restructuring moves callers (see docs/architecture.md). */
export * from "./memory/database.ts"
export * from "./memory/JobStore.ts"
export * from "./memory/LeaseLock.ts"
