/**
 * What a worker's log line says about a failed statement: the driver's own words, and a hint when
 * they mean that leasehold's schema is missing or older than the code (migrations not run).
 */
import { errorChain, isMissingSchema } from "../../adapters/schemaErrors.ts"

/**
 * The innermost message of the error's chain (the driver's: "no such table: leasehold_hosts"),
 * followed by a hint to run the migrations when the schema is missing.
 */
export const explain = (error: unknown): string => {
  const message = [...errorChain(error)].reverse().find((link) => link.message !== "")?.message ?? String(error)
  return isMissingSchema(error)
    ? `${message} — have leasehold's migrations run? (Migrator, or \`leasehold migrate\`)`
    : message
}
