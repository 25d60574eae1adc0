/**
 * SqlClient layers for a database URL, loading each database's client module
 * (src/adapters/{postgres,mysql,sqlite}/client.ts) only when that database is used: start-up
 * time matters for a command line, and an app should need only its own driver installed.
 */
import type { SqlClient } from "@effect/sql"
import type { SqliteClient } from "@effect/sql-sqlite-node"
import { Effect, Layer } from "effect"
import { DriverNotInstalledError } from "../core/errors.ts"

/** Whether a URL names a PostgreSQL database (`postgres://` or `postgresql://`). */
export const isPostgresUrl = (url: string): boolean => /^postgres(ql)?:\/\//.test(url)
/** Whether a URL names a MySQL/MariaDB database (`mysql://` or `mariadb://`). */
export const isMysqlUrl = (url: string): boolean => /^(mysql|mariadb):\/\//.test(url)

/** What each database needs installed: its Effect client and the driver under it. */
const POSTGRES = { database: "PostgreSQL", packages: ["pg", "@effect/sql-pg"] } as const
const MYSQL = { database: "MySQL/MariaDB", packages: ["mysql2", "@effect/sql-mysql2"] } as const
const SQLITE = { database: "SQLite", packages: ["better-sqlite3", "@effect/sql-sqlite-node"] } as const

/** Node's error for an import of a package that is not installed. */
const isModuleNotFound = (e: unknown): boolean =>
  (e as { code?: unknown } | null)?.code === "ERR_MODULE_NOT_FOUND" ||
  /Cannot find (module|package)/.test(String((e as Error | null)?.message ?? ""))

/** A layer made by loading a driver; a missing driver fails with `DriverNotInstalledError`. */
const load = <A, E>(
  driver: { readonly database: DriverNotInstalledError["database"]; readonly packages: ReadonlyArray<string> },
  make: () => Promise<Layer.Layer<A, E>>
): Layer.Layer<A, E | DriverNotInstalledError> =>
  Layer.unwrapEffect(Effect.tryPromise({
    try: make,
    catch: (e) => {
      if (!isModuleNotFound(e)) throw e
      const missing = /['"]([^'"]+)['"]/.exec(String((e as Error).message))?.[1] ?? driver.packages.join(", ")
      return new DriverNotInstalledError({ ...driver, missing })
    }
  }))

/** The SQLite client's service, for signatures that expose it (the testing kit). */
export type SqliteClientService = SqliteClient.SqliteClient

/**
 * The SqlClient layer for a database URL, failing with the driver's error: PostgreSQL and
 * MySQL/MariaDB by scheme, anything else a SQLite file name (`sqlite:` and `file:` prefixes
 * allowed). Only the driver in use is loaded.
 */
export const clientLayerForUrl = (url: string): Layer.Layer<SqlClient.SqlClient, unknown> => {
  if (isPostgresUrl(url)) {
    return load(POSTGRES, async () => (await import("./postgres/client.ts")).clientLayer(url))
  }
  if (isMysqlUrl(url)) {
    return load(MYSQL, async () => (await import("./mysql/client.ts")).clientLayer(url))
  }
  const filename = url.replace(/^sqlite:(\/\/)?/, "").replace(/^file:/, "")
  return load(SQLITE, async () => (await import("./sqlite/client.ts")).clientLayer(filename))
}

/** An in-memory SQLite database (the testing kit's): a fresh database per layer. */
export const sqliteMemoryLayer: Layer.Layer<SqlClient.SqlClient | SqliteClientService> = Layer.orDie(
  load(SQLITE, async () => (await import("./sqlite/client.ts")).clientLayer(":memory:"))
)

/**
 * The SqlClient over an existing node-postgres `Pool`, which stays the app's: leasehold never
 * ends it. Only its type is unknown here, so that this module does not load node-postgres.
 */
export const clientLayerForPgPool = (pool: unknown): Layer.Layer<SqlClient.SqlClient, unknown> =>
  load(POSTGRES, async () => (await import("./postgres/client.ts")).poolLayer(pool))
