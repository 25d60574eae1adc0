/**
 * The SQL that every dialect shares, and the small helpers the dialect files build on.
 *
 * A `Statement` is SQL text plus its parameters, with the dialect's own placeholders
 * (`$1` on PostgreSQL, `?` on MySQL and SQLite), ready for `sql.unsafe(text, params)`.
 * Statements that read the same on all three databases are written once here; whatever
 * differs (DDL, conflict-free insert, catalog queries, row counts) sits in the dialect's file.
 */
import type { LeaseRow } from "../core/lease.ts"

/** SQL text and its bound parameters. */
export interface Statement {
  readonly sql: string
  readonly params: ReadonlyArray<unknown>
}

/** Raw SQL spliced into a statement as written (identifiers, never user values). */
export class RawSql {
  constructor(readonly text: string) {}
}

/** The pieces of syntax that differ between dialects, chosen once when a store is built. */
export interface Syntax {
  readonly name: "pg" | "mysql" | "sqlite"
  /** The placeholder for the n-th parameter, 1-based. */
  readonly placeholder: (n: number) => string
  /** Quotes an identifier that is already known to be safe (see `checkIdentifier`). */
  readonly quote: (identifier: string) => string
}

/**
 * A tagged template that turns `${value}` into a bound parameter and `${RawSql}` into text,
 * so SQL reads as SQL in the dialect files.
 */
export const sqlFor = (syntax: Syntax) => (strings: TemplateStringsArray, ...values: ReadonlyArray<unknown>): Statement => {
  let text = strings[0] ?? ""
  const params: Array<unknown> = []
  values.forEach((value, i) => {
    if (value instanceof RawSql) {
      text += value.text
    } else {
      params.push(value)
      text += syntax.placeholder(params.length)
    }
    text += strings[i + 1] ?? ""
  })
  return { sql: text, params }
}

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/

/**
 * Table names come from configuration, never from users' data; still, only lowercase
 * letters, digits and underscores are accepted, so quoting can never be escaped and every
 * database (including MySQL with case-folding settings) sees the same name.
 */
export const checkIdentifier = (identifier: string): string => {
  if (!IDENTIFIER.test(identifier)) {
    throw new TypeError(
      `invalid table name ${JSON.stringify(identifier)}: use lowercase letters, digits and _ (at most 63)`
    )
  }
  return identifier
}

/** The lease-table statements (behaviour.md §2) for one dialect and one table. */
export interface LeaseStatements {
  readonly table: string
  readonly owner: (name: string) => Statement
  readonly read: (name: string) => Statement
  /** Inserts a new lease; on PostgreSQL and SQLite a duplicate name inserts nothing instead of failing. */
  readonly insert: (row: LeaseRow) => Statement
  /** Takes over the lease only where it expired strictly before `now`. */
  readonly takeOver: (row: LeaseRow) => Statement
  readonly renew: (name: string, owner: string, expiresAt: number) => Statement
  /** Deletes our own lease; with `expiredBefore`, only if it also expired before then. */
  readonly release: (name: string, owner: string, expiredBefore?: number) => Statement
  /** Every row, ordered by name. */
  readonly list: Statement
  readonly createTable: Statement
  /** Asks the catalog whether the table exists (never a probe that fails). */
  readonly tableExists: Statement
}

/** What a dialect file supplies for the lease table. */
export interface LeaseDialect {
  readonly createTable: (table: RawSql, tableName: string) => Statement
  readonly tableExists: (tableName: string) => Statement
  readonly insert: (table: RawSql, row: LeaseRow) => Statement
}

/** Builds the lease statements for one table from the shared SQL and the dialect's own. */
export const leaseStatements = (syntax: Syntax, dialect: LeaseDialect, tableName: string): LeaseStatements => {
  const sql = sqlFor(syntax)
  const t = new RawSql(syntax.quote(checkIdentifier(tableName)))
  return {
    table: tableName,
    owner: (name) => sql`SELECT lockowner FROM ${t} WHERE lockname = ${name}`,
    read: (name) =>
      sql`SELECT lockname, lockowner, lockhost, acquiredat, expiresat FROM ${t} WHERE lockname = ${name}`,
    insert: (row) => dialect.insert(t, row),
    takeOver: (row) =>
      sql`UPDATE ${t} SET lockowner = ${row.owner}, lockhost = ${row.host}, acquiredat = ${row.acquiredAt}, expiresat = ${row.expiresAt} WHERE lockname = ${row.name} AND expiresat < ${row.acquiredAt}`,
    renew: (name, owner, expiresAt) =>
      sql`UPDATE ${t} SET expiresat = ${expiresAt} WHERE lockname = ${name} AND lockowner = ${owner}`,
    release: (name, owner, expiredBefore) =>
      expiredBefore === undefined
        ? sql`DELETE FROM ${t} WHERE lockname = ${name} AND lockowner = ${owner}`
        : sql`DELETE FROM ${t} WHERE lockname = ${name} AND lockowner = ${owner} AND expiresat < ${expiredBefore}`,
    list: sql`SELECT lockname, lockowner, lockhost, acquiredat, expiresat FROM ${t} ORDER BY lockname`,
    createTable: dialect.createTable(t, tableName),
    tableExists: dialect.tableExists(tableName)
  }
}

/** Everything that differs between databases, one value per dialect file. */
export interface Dialect {
  readonly syntax: Syntax
  readonly lease: LeaseDialect
  /** Rows a statement changed, from the driver's `.raw` result. */
  readonly affectedRows: (raw: unknown) => number
}
