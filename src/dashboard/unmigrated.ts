/**
 * Telling from an error that leasehold's tables are not there (the migrations never ran) or are
 * older than the code (a column missing), and the words that say how to run the migrations. The
 * dashboard's pages and the command line's commands (src/cli/database.ts) share this one reading:
 * the command line may import the dashboard, never the other way round (.dependency-cruiser.cjs).
 */
import { type SchemaGap, schemaGap } from "../adapters/schemaErrors.ts"
import { DEFAULT_PREFIX } from "../core/tables.ts"

export { type SchemaGap, schemaGap }

/** How to run the migrations for the tables under `prefix`: the command, and the call from code. */
export const migrateHow = (prefix: string): { readonly command: string; readonly code: string } =>
  prefix === DEFAULT_PREFIX
    ? { command: "leasehold migrate", code: "Migrator.make().run" }
    : { command: `leasehold migrate --prefix ${prefix}`, code: `Migrator.make({ prefix: "${prefix}" }).run` }

/** What is wrong, in a few words: "are missing" or "are older than this version of leasehold". */
export const gapState = (gap: SchemaGap): string =>
  gap.missing === "table" ? "are missing" : "are older than this version of leasehold"

/** One line saying the tables under `prefix` are missing (or out of date) and how to migrate them. */
export const schemaGapMessage = (gap: SchemaGap, prefix: string): string => {
  const how = migrateHow(prefix)
  return `leasehold's tables (prefix ${prefix}) ${gapState(gap)} (${gap.detail}): run the migrations first, ` +
    `with \`${how.command}\` or ${how.code} from code`
}
