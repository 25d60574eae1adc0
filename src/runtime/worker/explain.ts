/**
 * What a worker's log line says about a failed statement: the driver's own words, and a hint when
 * they mean that leasehold's schema is missing or older than the code (migrations not run).
 */

/** The three databases' words for a table or column that is not there. */
const MISSING_SCHEMA = /no such (table|column)|does not exist|doesn't exist|unknown column/i

/**
 * The driver's message under an SqlError ("no such table: leasehold_hosts"), else the error's
 * own, followed by a hint to run the migrations when the schema is missing.
 */
export const explain = (error: unknown): string => {
  const outer = error as { readonly message?: unknown; readonly cause?: unknown } | null
  const inner = (outer?.cause as { message?: unknown } | undefined)?.message
  const message = typeof inner === "string" && inner !== ""
    ? inner
    : typeof outer?.message === "string"
    ? outer.message
    : String(error)
  return MISSING_SCHEMA.test(message)
    ? `${message} — have leasehold's migrations run? (Migrator, or \`leasehold migrate\`)`
    : message
}
