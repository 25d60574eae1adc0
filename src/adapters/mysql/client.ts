/**
 * MySQL/MariaDB's SqlClient, the one module that loads @effect/sql-mysql2. Reached through
 * "leasehold/mysql" or, for a URL, src/adapters/clients.ts, so that an app on another database
 * never loads it. A URL naming several hosts (`mysql://u@h1:3307,h2:3308,h3:3309/db`) is a
 * Galera cluster: ./cluster.ts spreads the statements over its nodes.
 */
import type { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { MysqlClient } from "@effect/sql-mysql2"
import type { ConfigError } from "effect/ConfigError"
import type { Layer } from "effect"
import { Redacted } from "effect"
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
 * several hosts, a SqlClient over those Galera nodes (`clusterClientLayer`).
 */
export const clientLayer = (
  url: string | Redacted.Redacted,
  options: MysqlClientOptions = {}
): Layer.Layer<SqlClient.SqlClient, SqlError | ConfigError> => {
  // mysql2 knows only the mysql: scheme; MariaDB speaks the same protocol.
  const text = (typeof url === "string" ? url : Redacted.value(url)).replace(/^mariadb:/, "mysql:")
  const nodes = nodeUrls(text)
  if (nodes !== undefined) return clusterClientLayer(nodes, { maxConnectionsPerNode: options.maxConnections })
  return MysqlClient.layer({ url: Redacted.make(text), maxConnections: options.maxConnections ?? 10 })
}
