/**
 * SQLite's SqlClient, the one module that loads @effect/sql-sqlite-node (better-sqlite3, a native
 * module). Reached through "leasehold/sqlite" or, for a URL, src/adapters/clients.ts, so that an
 * app on another database never compiles or loads it.
 */
import { SqliteClient } from "@effect/sql-sqlite-node"

export { SqliteClient }

/** A `SqliteClient` layer (also a `SqlClient`) on a database file (`:memory:` for a private in-memory one). */
export const clientLayer = (filename: string) => SqliteClient.layer({ filename })
