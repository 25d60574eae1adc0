/**
 * MySQL/MariaDB's SqlClient, the one module that loads @effect/sql-mysql2. Reached through
 * "leasehold/mysql" or, for a URL, src/adapters/clients.ts, so that an app on another database
 * never loads it. A URL naming several hosts (`mysql://u@h1:3307,h2:3308,h3:3309/db`) is a
 * Galera cluster: ./cluster.ts spreads the statements over its nodes.
 */
import type { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { MysqlClient } from "@effect/sql-mysql2"
import type { ConfigError } from "effect/ConfigError"
import { Layer, Redacted } from "effect"
import type { DatabaseUrlMismatchError } from "../../core/errors.ts"
import { connectError } from "../connectErrors.ts"
import { urlMismatch } from "../databaseUrls.ts"
import { clusterClientLayer, nodeUrls } from "./cluster.ts"

export { MysqlClient }
export { type ClusterClientOptions, clusterClientLayer } from "./cluster.ts"

/** Options of `clientLayer`. */
export interface MysqlClientOptions {
  /** Pool size (default 10; per node for a cluster URL). */
  readonly maxConnections?: number | undefined
}

/**
 * A `MysqlClient` layer (also a `SqlClient`) for a `mysql://` or `mariadb://` URL; for a URL with
 * several hosts, a SqlClient over those Galera nodes (`clusterClientLayer`). A URL of another
 * database fails it with `DatabaseUrlMismatchError` before any connection; a server that cannot
 * be reached, with a `SqlError` saying where it tried (password masked) and the driver's reason.
 */
export const clientLayer = (
  url: string | Redacted.Redacted,
  options: MysqlClientOptions = {}
): Layer.Layer<SqlClient.SqlClient, SqlError | ConfigError | DatabaseUrlMismatchError> => {
  const given = typeof url === "string" ? url : Redacted.value(url)
  const mismatch = urlMismatch("MySQL/MariaDB", given)
  if (mismatch !== undefined) return Layer.fail(mismatch)
  // mysql2 knows only the mysql: scheme; MariaDB speaks the same protocol.
  const text = given.replace(/^mariadb:/, "mysql:")
  const nodes = nodeUrls(text)
  const client: Layer.Layer<SqlClient.SqlClient, SqlError | ConfigError> = nodes !== undefined
    ? clusterClientLayer(nodes, { maxConnectionsPerNode: options.maxConnections })
    : MysqlClient.layer({ url: Redacted.make(text), maxConnections: options.maxConnections ?? 10 })
  return Layer.mapError(client, (e) => (e instanceof SqlError ? connectError(given, e.cause ?? e) : e))
}
