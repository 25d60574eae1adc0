/**
 * MySQL/MariaDB's SqlClient, the one module that loads @effect/sql-mysql2. Reached through
 * "leasehold/mysql" or, for a URL, src/adapters/clients.ts, so that an app on another database
 * never loads it.
 */
import { MysqlClient } from "@effect/sql-mysql2"
import { Redacted } from "effect"

export { MysqlClient }

/** Options of `clientLayer`. */
export interface MysqlClientOptions {
  /** Pool size (default 10). */
  readonly maxConnections?: number | undefined
}

/** A `MysqlClient` layer (also a `SqlClient`) for a `mysql://` or `mariadb://` URL. */
export const clientLayer = (url: string | Redacted.Redacted, options: MysqlClientOptions = {}) => {
  // mysql2 knows only the mysql: scheme; MariaDB speaks the same protocol.
  const text = (typeof url === "string" ? url : Redacted.value(url)).replace(/^mariadb:/, "mysql:")
  return MysqlClient.layer({ url: Redacted.make(text), maxConnections: options.maxConnections ?? 10 })
}
