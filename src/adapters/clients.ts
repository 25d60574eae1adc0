/**
 * SqlClient layers for a database URL: the one place outside the dialect folders that loads the
 * driver packages, each only when its database is used (start-up time matters for a command
 * line, and an app should need only its own driver installed).
 */
import type { SqlClient } from "@effect/sql"
import type { SqliteClient } from "@effect/sql-sqlite-node"
import { Effect, Layer, Redacted } from "effect"

/** Whether a URL names a PostgreSQL database (`postgres://` or `postgresql://`). */
export const isPostgresUrl = (url: string): boolean => /^postgres(ql)?:\/\//.test(url)
/** Whether a URL names a MySQL/MariaDB database (`mysql://` or `mariadb://`). */
export const isMysqlUrl = (url: string): boolean => /^(mysql|mariadb):\/\//.test(url)

/** The SQLite client's service, for signatures that expose it (the testing kit). */
export type SqliteClientService = SqliteClient.SqliteClient

/**
 * The SqlClient layer for a database URL, failing with the driver's error: PostgreSQL and
 * MySQL/MariaDB by scheme, anything else a SQLite file name (`sqlite:` and `file:` prefixes
 * allowed). Only the driver in use is loaded.
 */
export const clientLayerForUrl = (url: string): Layer.Layer<SqlClient.SqlClient, unknown> => {
  const load = (f: () => Promise<Layer.Layer<SqlClient.SqlClient, unknown>>) => Layer.unwrapEffect(Effect.promise(f))
  if (isPostgresUrl(url)) {
    return load(async () => {
      const { PgClient } = await import("@effect/sql-pg")
      return PgClient.layer({ url: Redacted.make(url), maxConnections: 10, connectTimeout: "10 seconds" })
    })
  }
  if (isMysqlUrl(url)) {
    return load(async () => {
      const { MysqlClient } = await import("@effect/sql-mysql2")
      return MysqlClient.layer({ url: Redacted.make(url.replace(/^mariadb:/, "mysql:")), maxConnections: 10 })
    })
  }
  const filename = url.replace(/^sqlite:(\/\/)?/, "").replace(/^file:/, "")
  return load(async () => {
    const { SqliteClient } = await import("@effect/sql-sqlite-node")
    return SqliteClient.layer({ filename })
  })
}

/** An in-memory SQLite database (the testing kit's): a fresh database per layer. */
export const sqliteMemoryLayer: Layer.Layer<SqlClient.SqlClient | SqliteClientService> = Layer.unwrapEffect(
  Effect.promise(async () => {
    const { SqliteClient } = await import("@effect/sql-sqlite-node")
    return Layer.orDie(SqliteClient.layer({ filename: ":memory:" }))
  })
)
