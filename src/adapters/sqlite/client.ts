/**
 * SQLite's SqlClient, the one module that loads @effect/sql-sqlite-node (better-sqlite3, a native
 * module). Reached through "leasehold/sqlite" or, for a URL, src/adapters/clients.ts, so that an
 * app on another database never compiles or loads it.
 */
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Duration } from "effect"

export { SqliteClient }

/**
 * How long the client keeps a prepared statement. @effect/sql-sqlite-node caches a statement
 * that failed to prepare as well (its default: 10 minutes), so a statement that ran before
 * `migrate` created its table ("no such table") would keep failing after it; a short life
 * bounds that to a second, and preparing again costs microseconds.
 */
export const PREPARE_CACHE_TTL = Duration.seconds(1)

/** A `SqliteClient` layer (also a `SqlClient`) on a database file (`:memory:` for a private in-memory one). */
export const clientLayer = (filename: string) => SqliteClient.layer({ filename, prepareCacheTTL: PREPARE_CACHE_TTL })
