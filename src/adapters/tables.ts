/** Old path of the table names, kept while the restructuring moves callers (see docs/architecture.md). */
export * from "../core/tables.ts"
