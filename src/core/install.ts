/**
 * What an app installs beside leasehold, as npm install specs on the Effect 3 line leasehold is
 * built on. The registry's `latest` is Effect 4, which leasehold cannot share an app with: an
 * unpinned `npm install @effect/sql-pg` fetches the 4.x line and fails against leasehold's peers.
 * Every install command leasehold prints (a missing driver, the command line's packages, tsx) uses
 * these, and so does README.md (test/e2e/package.test.ts runs its commands as written).
 */

/** The Effect packages leasehold shares with the app (its peer dependencies). */
export const EFFECT_PACKAGES: ReadonlyArray<string> = [
  "effect@^3.22",
  "@effect/sql@^0.52",
  "@effect/platform@^0.97",
  "@effect/experimental@^0.61"
]

/** Each database's driver pair: its Effect client and the driver under it. */
export const DRIVER_PACKAGES = {
  PostgreSQL: ["pg@^8", "@effect/sql-pg@^0.53"],
  "MySQL/MariaDB": ["mysql2@^3", "@effect/sql-mysql2@^0.53"],
  // better-sqlite3 13 needs Node 22: on Node 20 it installs, then crashes the process.
  SQLite: ["better-sqlite3@^12", "@effect/sql-sqlite-node@^0.53"]
} as const satisfies Record<string, ReadonlyArray<string>>

/**
 * The `leasehold` command's own packages, which the library never loads: installed only by an
 * app that uses the command (as a dev dependency).
 */
export const CLI_PACKAGES: ReadonlyArray<string> = [
  "@effect/cli@^0.77",
  "@effect/platform-node@^0.108",
  "@effect/printer@^0.51",
  "@effect/printer-ansi@^0.51"
]

/** What runs a job module or an example written in TypeScript. */
export const TSX_PACKAGE = "tsx@^4"

/** The package name of an install spec (`@effect/sql-pg@^0.53` → `@effect/sql-pg`). */
export const packageName = (spec: string): string => spec.replace(/(?<=.)@[^@/]*$/, "")

/** `npm install` of `specs` (`dev`: as dev dependencies). */
export const installCommand = (specs: ReadonlyArray<string>, dev = false): string =>
  `npm install ${dev ? "-D " : ""}${specs.join(" ")}`
