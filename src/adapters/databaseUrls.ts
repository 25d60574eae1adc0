/**
 * Which database a URL names, by its scheme: the one reading of a database URL that the clients
 * for a URL (./clients.ts), each database's own layer (./{postgres,mysql,sqlite}/client.ts) and
 * the command line share. Loads no driver.
 */
import { maskCredentials } from "../infra/credentials.ts"
import { type DatabaseKind, DatabaseUrlMismatchError } from "../core/errors.ts"

/** Whether a URL names a PostgreSQL database (`postgres://` or `postgresql://`). */
export const isPostgresUrl = (url: string): boolean => /^postgres(ql)?:\/\//.test(url)
/** Whether a URL names a MySQL/MariaDB database (`mysql://` or `mariadb://`). */
export const isMysqlUrl = (url: string): boolean => /^(mysql|mariadb):\/\//.test(url)

/**
 * The scheme of a URL that names no database leasehold knows (`postgress://…`), or undefined:
 * anything of the form `scheme://` other than postgres, postgresql, mysql, mariadb, sqlite and
 * file. A plain path (even `C:\x.db`) has no `://` and is an SQLite file.
 */
export const unsupportedScheme = (url: string): string | undefined => {
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(url)?.[1]
  return scheme === undefined || /^(postgres|postgresql|mysql|mariadb|sqlite|file)$/.test(scheme) ? undefined : scheme
}

/** The SQLite file a URL names (`sqlite:` and `file:` prefixes removed), or undefined for a server URL. */
export const sqliteFilename = (url: string): string | undefined =>
  isPostgresUrl(url) || isMysqlUrl(url) || unsupportedScheme(url) !== undefined
    ? undefined
    : url.replace(/^sqlite:(\/\/)?/, "").replace(/^file:/, "")

/** The database a URL names (undefined: an unknown `scheme://`). */
export const databaseOf = (url: string): DatabaseKind | undefined =>
  isPostgresUrl(url)
    ? "PostgreSQL"
    : isMysqlUrl(url)
    ? "MySQL/MariaDB"
    : sqliteFilename(url) === undefined
    ? undefined
    : "SQLite"

/**
 * Undefined when `url` names a database of kind `expected`; else the typed error saying what it
 * names instead (its password masked), for a layer of one database given another's URL.
 */
export const urlMismatch = (expected: DatabaseKind, url: string): DatabaseUrlMismatchError | undefined => {
  const found = databaseOf(url)
  return found === expected
    ? undefined
    : new DatabaseUrlMismatchError({
      expected,
      url: maskCredentials(url),
      found: found ?? `an unknown scheme (${unsupportedScheme(url)}://)`
    })
}
