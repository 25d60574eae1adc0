/**
 * SQLite's SqlClient, the one module that loads @effect/sql-sqlite-node (better-sqlite3, a native
 * module). Reached through "leasehold/sqlite" or, for a URL, src/adapters/clients.ts, so that an
 * app on another database never compiles or loads it.
 */
import type { SqlClient } from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Cause, Duration, Layer } from "effect"
import type { DatabaseUrlMismatchError } from "../../core/errors.ts"
import { connectError } from "../connectErrors.ts"
import { urlMismatch } from "../databaseUrls.ts"

export { SqliteClient }

/**
 * How long the client keeps a prepared statement. @effect/sql-sqlite-node caches a statement
 * that failed to prepare as well (its default: 10 minutes), so a statement that ran before
 * `migrate` created its table ("no such table") would keep failing after it; a short life
 * bounds that to a second, and preparing again costs microseconds.
 */
export const PREPARE_CACHE_TTL = Duration.seconds(1)

/**
 * A `SqliteClient` layer (also a `SqlClient`) on a database file (`:memory:` for a private
 * in-memory one). A server URL fails it with `DatabaseUrlMismatchError`; a file that cannot be
 * opened (its directory missing, no permission) with a `SqlError` naming the file and the
 * driver's reason, where the driver's own error would be a defect.
 */
export const clientLayer = (
  filename: string
): Layer.Layer<SqliteClient.SqliteClient | SqlClient, SqlError | DatabaseUrlMismatchError> => {
  const mismatch = urlMismatch("SQLite", filename)
  if (mismatch !== undefined) return Layer.fail(mismatch)
  const base: Layer.Layer<SqliteClient.SqliteClient | SqlClient, unknown> = SqliteClient.layer({
    filename,
    prepareCacheTTL: PREPARE_CACHE_TTL
  })
  return Layer.catchAllCause(
    base,
    (cause): Layer.Layer<SqliteClient.SqliteClient | SqlClient, SqlError> =>
      Cause.isInterruptedOnly(cause)
        ? Layer.failCause(cause as Cause.Cause<never>)
        : Layer.fail(connectError(filename, Cause.squash(cause), true))
  )
}
