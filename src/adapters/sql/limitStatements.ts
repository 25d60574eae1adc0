/**
 * The limits table's statements (docs/behaviour.md §19; src/core/limits.ts), and the one job
 * statement a lifted pause needs. They read the same on every database, so they are written once
 * and rendered with each dialect's placeholders and quoting; the table's DDL is migration 12 in
 * ./schema.ts.
 */
import type { LimitRow } from "../../core/limits.ts"
import type { TableNames } from "../../core/tables.ts"
import { checkIdentifier, RawSql, sqlFor, type Syntax } from "./statement.ts"

/** The columns of a limits row, in `decodeLimitRow`'s names. */
const COLUMNS =
  "scope, target, concurrency, type_cap, rate_limit, rate_period_ms, paused, paused_by, paused_at, updated_at"

/** The limits statements for one dialect's syntax and one table prefix. */
export const limitStatements = (syntax: Syntax, tables: TableNames) => {
  const sql = sqlFor(syntax)
  const t = new RawSql(syntax.quote(checkIdentifier(tables.limits)))
  const jobs = new RawSql(syntax.quote(checkIdentifier(tables.jobs)))
  const cols = new RawSql(COLUMNS)
  return {
    all: sql`SELECT ${cols} FROM ${t} ORDER BY scope, target`,
    one: (scope: string, target: string) => sql`SELECT ${cols} FROM ${t} WHERE scope = ${scope} AND target = ${target}`,
    insert: (r: LimitRow) =>
      sql`INSERT INTO ${t} (${cols}) VALUES (${r.scope}, ${r.target}, ${r.concurrency}, ${r.typeCap}, ${r.rateLimit}, ${r.ratePeriodMs}, ${
        r.paused ? 1 : 0
      }, ${r.pausedBy}, ${r.pausedAt}, ${r.updatedAt})`,
    update: (r: LimitRow) =>
      sql`UPDATE ${t} SET concurrency = ${r.concurrency}, type_cap = ${r.typeCap}, rate_limit = ${r.rateLimit}, rate_period_ms = ${r.ratePeriodMs}, paused = ${
        r.paused ? 1 : 0
      }, paused_by = ${r.pausedBy}, paused_at = ${r.pausedAt}, updated_at = ${r.updatedAt} WHERE scope = ${r.scope} AND target = ${r.target}`,
    remove: (scope: string, target: string) => sql`DELETE FROM ${t} WHERE scope = ${scope} AND target = ${target}`,
    /** Every pending job waiting on `name` due now (its run_at brought forward, never moved later). */
    wake: (name: string, now: number) =>
      sql`UPDATE ${jobs} SET run_at = CASE WHEN run_at > ${now} THEN ${now} ELSE run_at END, lease_name = NULL WHERE lease_name = ${name} AND status = 'pending'`
  }
}
