/** The lease-table statements (docs/behaviour.md §2) shared by every dialect. */
import type { LeaseRow } from "../../core/lease.ts"
import { tokensTable } from "../../core/tables.ts"
import type { LeaseDialect } from "./leaseDialect.ts"
import { checkIdentifier, RawSql, type Statement, sqlFor, type Syntax } from "./statement.ts"

/** The lease-table statements (docs/behaviour.md §2) for one dialect and one table. */
export interface LeaseStatements {
  readonly table: string
  readonly owner: (name: string) => Statement
  readonly read: (name: string) => Statement
  /** Inserts a new lease; on PostgreSQL and SQLite a duplicate name inserts nothing instead of failing. */
  readonly insert: (row: LeaseRow) => Statement
  /** The table's name quoted for SQL, for the dialect's own acquire statement. */
  readonly quoted: RawSql
  /** The fencing-token counter table's name (`<table>_tokens`), and quoted for SQL. */
  readonly tokensTable: string
  readonly tokens: RawSql
  /** The owner of `name` and its current token (null when the counter has no row). */
  readonly ownerAndToken: (name: string) => Statement
  /** Adds 1 to `name`'s token counter; the last statement's row holds `token`. */
  readonly bumpToken: (name: string) => ReadonlyArray<Statement>
  readonly createTokensTable: Statement
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

/** Builds the lease statements for one table from the shared SQL and the dialect's own. */
export const leaseStatements = (syntax: Syntax, dialect: LeaseDialect, tableName: string): LeaseStatements => {
  const sql = sqlFor(syntax)
  const t = new RawSql(syntax.quote(checkIdentifier(tableName)))
  const tokensName = tokensTable(tableName)
  const k = new RawSql(syntax.quote(tokensName))
  return {
    table: tableName,
    owner: (name) => sql`SELECT lockowner FROM ${t} WHERE lockname = ${name}`,
    read: (name) => sql`SELECT lockname, lockowner, lockhost, acquiredat, expiresat FROM ${t} WHERE lockname = ${name}`,
    insert: (row) => dialect.insert(t, row),
    quoted: t,
    tokensTable: tokensName,
    tokens: k,
    ownerAndToken: (name) =>
      sql`SELECT l.lockowner, k.token FROM ${t} l LEFT JOIN ${k} k ON k.lockname = l.lockname WHERE l.lockname = ${name}`,
    bumpToken: (name) => dialect.bumpToken(k, name),
    createTokensTable: dialect.createTokensTable(k),
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
