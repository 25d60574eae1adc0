/**
 * How the command line reads `--database-url` before anything connects. A server URL is
 * `postgres://`, `postgresql://`, `mysql://` or `mariadb://`; an SQLite file is `sqlite:…`,
 * `file:…`, `:memory:`, or a path: one with a path separator, or a name ending in `.db`,
 * `.sqlite` or `.sqlite3`. Anything else is refused with one line saying what to write instead,
 * so that neither a typo (`postgres//host/db`, `mysql:host`) nor a bare word (`newcomer`) is
 * taken for an SQLite file and created. Passwords are masked in every line that echoes the URL.
 */
import { sqliteFilename, unsupportedScheme } from "../adapters/clients.ts"
import { maskCredentials } from "../infra/credentials.ts"

/** What a `--database-url` names: a server, an SQLite file, or nothing leasehold can use (and why). */
export type DatabaseTarget =
  | { readonly _tag: "Server" }
  | { readonly _tag: "Sqlite"; readonly file: string }
  | { readonly _tag: "Refused"; readonly message: string }

/** The schemes of the servers, which must be followed by `://`. */
const SERVER_SCHEME = /^(postgresql|postgres|mysql|mariadb)(?=[:/])/i

/** `text` with any password masked, also in a `user:password@host` that has no `//` before it. */
const masked = (text: string): string => maskCredentials(text).replace(/^([^:@/\s]*):([^@/\s]+)@/, "$1:***@")

/** Whether `url` reads as an SQLite file: a prefix that says so, or the look of a path. */
const looksLikeSqlite = (url: string): boolean =>
  /^(sqlite|file):/.test(url) || url === ":memory:" || /[/\\]/.test(url) || /\.(db|sqlite3?)$/i.test(url)

/** Reads a database URL as the command line takes it (module comment); never throws. */
export const databaseTarget = (url: string): DatabaseTarget => {
  if (url.trim() === "") {
    return {
      _tag: "Refused",
      message:
        "--database-url: empty; give a postgres://, mysql:// or mariadb:// URL, or an SQLite file such as ./leasehold.db"
    }
  }
  const server = SERVER_SCHEME.exec(url)
  if (server !== null) {
    const scheme = server[1]!
    if (url.startsWith(`${scheme}://`) && scheme === scheme.toLowerCase()) return { _tag: "Server" }
    // A known scheme without its `://` (or in capitals): never a file name, most likely a typo.
    const typed = url.slice(0, scheme.length) + /^[:/]*/.exec(url.slice(scheme.length))![0]
    const rest = url.slice(typed.length)
    const meant = `${scheme.toLowerCase()}://${rest === "" ? "user:password@host/database" : rest}`
    return {
      _tag: "Refused",
      message:
        `--database-url: "${typed}…" is not a database URL (${
          typed.endsWith("://") ? "write the scheme in lower case" : `${scheme.toLowerCase()} needs "://"`
        }); ` +
        `did you mean ${masked(meant)}?`
    }
  }
  const scheme = unsupportedScheme(url)
  if (scheme !== undefined) {
    return {
      _tag: "Refused",
      message: `--database-url: unknown scheme "${scheme}://" in ${maskCredentials(url)}; use postgres://, ` +
        "postgresql://, mysql://, mariadb://, sqlite:, file:, or a plain file path"
    }
  }
  if (looksLikeSqlite(url)) return { _tag: "Sqlite", file: sqliteFilename(url) ?? url }
  const word = masked(url)
  return {
    _tag: "Refused",
    message: `--database-url: "${word}" is neither a server URL (postgres://, mysql://, mariadb://) nor an ` +
      `SQLite file; to use an SQLite file, name it as a path or with sqlite: (./${word}.db or sqlite:${word})`
  }
}
