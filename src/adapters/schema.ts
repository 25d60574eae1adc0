/** Old path of the schema, kept while the restructuring moves callers (see docs/architecture.md). */
export * from "./sql/schema.ts"
