/**
 * What a worker's log line says about a failed statement: the driver's own words, and a hint when
 * they mean that leasehold's schema is missing or older than the code (migrations not run).
 */
import { Cause, Effect } from "effect"
import { innermostMessage, isMissingSchema, MIGRATE_HINT } from "../../adapters/schemaErrors.ts"

/**
 * The innermost message of the error's chain (the driver's: "no such table: leasehold_hosts"),
 * followed by a hint to run the migrations when the schema is missing.
 */
export const explain = (error: unknown): string => {
  const message = innermostMessage(error)
  return isMissingSchema(error) && !message.endsWith(MIGRATE_HINT) ? `${message}: ${MIGRATE_HINT}` : message
}

/**
 * Logs a failure of the worker's own loops as one WARN line (`line` given the failure's
 * explanation), and the failure itself, whole, at DEBUG: a loop that fails every interval (the
 * database gone, the tables missing) writes one readable line each time, not a dump.
 */
export const warnFailure = (line: (reason: string) => string, failure: unknown): Effect.Effect<void> => {
  const error = Cause.isCause(failure) ? Cause.squash(failure) : failure
  return Effect.zipRight(
    Effect.logWarning(line(explain(error))),
    Effect.logDebug(`${line(explain(error))}: the failure`, failure)
  )
}
