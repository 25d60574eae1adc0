/**
 * SqlClient layers for a database URL, loading each database's client module
 * (src/adapters/{postgres,mysql,sqlite}/client.ts) only when that database is used: start-up
 * time matters for a command line, and an app should need only its own driver installed.
 */
import type { SqlClient } from "@effect/sql"
import type { SqliteClient } from "@effect/sql-sqlite-node"
import { Effect, Layer } from "effect"
import { DriverNotInstalledError, UnsupportedDatabaseUrlError } from "../core/errors.ts"
import { isMysqlUrl, isPostgresUrl, sqliteFilename, unsupportedScheme } from "./databaseUrls.ts"

export { isMysqlUrl, isPostgresUrl, sqliteFilename, unsupportedScheme } from "./databaseUrls.ts"

/** What each database needs installed: its Effect client and the driver under it. */
const POSTGRES = { database: "PostgreSQL", packages: ["pg", "@effect/sql-pg"] } as const
const MYSQL = { database: "MySQL/MariaDB", packages: ["mysql2", "@effect/sql-mysql2"] } as const
const SQLITE = { database: "SQLite", packages: ["better-sqlite3", "@effect/sql-sqlite-node"] } as const

/**
 * The package a failed import could not find, if that is what failed: Node's
 * ERR_MODULE_NOT_FOUND names it ("Cannot find package 'pg' imported from …").
 */
const notFoundPackage = (e: unknown): string | undefined => {
  const error = e as { readonly code?: unknown; readonly message?: unknown } | null
  if (error?.code !== "ERR_MODULE_NOT_FOUND") return undefined
  return /Cannot find (?:package|module) '([^']+)'/.exec(String(error.message))?.[1]
}

/**
 * A layer made by loading a driver. A driver package that is not installed fails with
 * `DriverNotInstalledError`; any other failure to load (a module of leasehold's own missing, a
 * native module that will not load) fails with the error itself, never a misleading hint.
 */
const load = <A, E>(
  driver: { readonly database: DriverNotInstalledError["database"]; readonly packages: ReadonlyArray<string> },
  make: () => Promise<Layer.Layer<A, E>>
): Layer.Layer<A, E | DriverNotInstalledError | unknown> =>
  Layer.unwrapEffect(Effect.tryPromise({
    try: make,
    catch: (e) => {
      const missing = notFoundPackage(e)
      const isDriver = missing !== undefined &&
        driver.packages.some((p) => missing === p || missing.startsWith(`${p}/`))
      return isDriver ? new DriverNotInstalledError({ ...driver, missing }) : e
    }
  }))

/** The SQLite client's service, for signatures that expose it (the testing kit). */
export type SqliteClientService = SqliteClient.SqliteClient

/**
 * The SqlClient layer for a database URL, failing with the driver's error: PostgreSQL and
 * MySQL/MariaDB by scheme, an unknown `scheme://` with `UnsupportedDatabaseUrlError`, anything
 * else a SQLite file name (`sqlite:` and `file:` prefixes allowed). Only the driver in use is
 * loaded.
 */
export const clientLayerForUrl = (url: string): Layer.Layer<SqlClient.SqlClient, unknown> => {
  if (isPostgresUrl(url)) {
    return load(POSTGRES, async () => (await import("./postgres/client.ts")).clientLayer(url))
  }
  if (isMysqlUrl(url)) {
    return load(MYSQL, async () => (await import("./mysql/client.ts")).clientLayer(url))
  }
  const filename = sqliteFilename(url)
  if (filename === undefined) return Layer.fail(new UnsupportedDatabaseUrlError({ scheme: unsupportedScheme(url)! }))
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
