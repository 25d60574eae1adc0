/**
 * SQLite: every statement that is SQLite's own. Placeholders are `?`; INTEGER holds epoch ms;
 * row counts are better-sqlite3's `changes`.
 */
import { MAX_HISTORY } from "../../core/history.ts"
import { JOB_COLUMNS, newJobRows } from "../sql/columns.ts"
import type { ClaimParts, Dialect, JobSqlContext } from "../sql/dialect.ts"
import { errorCode } from "../sql/driverErrors.ts"
import { literalInt, RawSql, type Syntax, sqlFor } from "../sql/statement.ts"

const syntax: Syntax = {
  name: "sqlite",
  placeholder: () => "?",
  quote: (id) => `"${id}"`
}
const sql = sqlFor(syntax)

// Claims up to `limit` due rows; with a host cap, only while the host runs fewer than it. One
// per key: of those rows, the best of each `claim_lease` (rows without one are each their own).
const claimStatement = ({ sql, jobs }: JobSqlContext, { set, due, capped, limit, onePerKey }: ClaimParts) => {
  const best = sql`SELECT id FROM ${jobs} WHERE ${due} ORDER BY priority DESC, run_at ASC LIMIT ${limit}`
  const picked = onePerKey
    ? sql`SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY claim_lease, CASE WHEN claim_lease IS NULL THEN id END ORDER BY priority DESC, run_at ASC) AS n FROM ${jobs} WHERE id IN (${best})) WHERE n = 1`
    : best
  return sql`UPDATE ${jobs} SET ${set} WHERE id IN (${picked})${capped} RETURNING ${JOB_COLUMNS}`
}

/** The SQLite dialect. */
export const sqlite: Dialect = {
  syntax,
  inProcess: true,
  lease: {
    createTable: (t) =>
      sql`CREATE TABLE IF NOT EXISTS ${t} (
  lockname VARCHAR(100) NOT NULL PRIMARY KEY,
  lockowner VARCHAR(64) NOT NULL,
  lockhost VARCHAR(255),
  acquiredat INTEGER NOT NULL,
  expiresat INTEGER NOT NULL
)`,
    tableExists: (name) => sql`SELECT 1 AS present FROM sqlite_master WHERE type = 'table' AND name = ${name}`,
    insert: (t, row) =>
      sql`INSERT INTO ${t} (lockname, lockowner, lockhost, acquiredat, expiresat) VALUES (${row.name}, ${row.owner}, ${row.host}, ${row.acquiredAt}, ${row.expiresAt}) ON CONFLICT (lockname) DO NOTHING`,
    // Bump the counter if the lease is free or expired, then insert or take over a lease that
    // expired strictly before now while the counter holds our token. Each statement runs alone
    // (one writer at a time), so no BEGIN/COMMIT is needed (src/adapters/sql/dialect.ts).
    acquire: {
      kind: "bumpThenUpsert",
      bump: (t, tokens, row) =>
        sql`INSERT INTO ${tokens} (lockname, token) SELECT ${row.name}, 1 WHERE NOT EXISTS (SELECT 1 FROM ${t} WHERE lockname = ${row.name} AND expiresat >= ${row.acquiredAt}) ON CONFLICT (lockname) DO UPDATE SET token = token + 1 RETURNING token`,
      upsert: (t, tokens, row, token) =>
        sql`INSERT INTO ${t} (lockname, lockowner, lockhost, acquiredat, expiresat) SELECT ${row.name}, ${row.owner}, ${row.host}, ${row.acquiredAt}, ${row.expiresAt} WHERE (SELECT token FROM ${tokens} WHERE lockname = ${row.name}) = ${token} ON CONFLICT (lockname) DO UPDATE SET lockowner = excluded.lockowner, lockhost = excluded.lockhost, acquiredat = excluded.acquiredat, expiresat = excluded.expiresat WHERE expiresat < excluded.acquiredat RETURNING lockowner`
    },
    createTokensTable: (tokens) =>
      sql`CREATE TABLE IF NOT EXISTS ${tokens} (
  lockname VARCHAR(100) NOT NULL PRIMARY KEY,
  token INTEGER NOT NULL
)`,
    bumpToken: (tokens, name) => [
      sql`INSERT INTO ${tokens} (lockname, token) VALUES (${name}, 1) ON CONFLICT (lockname) DO UPDATE SET token = token + 1 RETURNING token`
    ]
  },
  fences: {
    createTable: (t) =>
      sql`CREATE TABLE IF NOT EXISTS ${t} (
  resource VARCHAR(255) NOT NULL PRIMARY KEY,
  token INTEGER NOT NULL
)`,
    // One writer at a time: the transaction holds the database until it ends.
    record: (t, resource, token) => [
      sql`INSERT INTO ${t} (resource, token) VALUES (${resource}, ${token}) ON CONFLICT (resource) DO UPDATE SET token = max(token, excluded.token) RETURNING token`
    ]
  },
  jobs: {
    insert: (c, j) => c.sql`INSERT INTO ${c.jobs} ${newJobRows(c, [j])} ON CONFLICT (unique_key) DO NOTHING`,
    insertMany: (c, jobs) =>
      c.sql`INSERT INTO ${c.jobs} ${newJobRows(c, jobs)} ON CONFLICT (unique_key) DO NOTHING RETURNING id`,
    latestRead: new RawSql(""),
    // One statement, and SQLite has one writer at a time, so picking and claiming (and, with a
    // host cap, counting) cannot interleave with another claimer.
    claim: {
      kind: "returning",
      statement: claimStatement,
      // 36 hex characters, the width of the claim token column.
      newToken: new RawSql("lower(hex(randomblob(18)))"),
      // No data-modifying CTE: each attempt takes its lease after the claim.
      leases: { kind: "inAttempt" }
    },
    hostCap: { kind: "countInClaim", statement: claimStatement },
    // PRAGMA data_version changes when another connection (another process) commits to the
    // file; it reads no table, so a fast probe costs next to nothing (docs/behaviour.md §9).
    wakeups: { kind: "poll", probe: { everyMs: 25, statement: ({ sql }) => sql`PRAGMA data_version` } },
    finish: { kind: "steps" },
    updateReports: "rows",
    isolation: "session",
    handOff: ({ sql, jobs }, leaseName, now, exceptId) =>
      sql`UPDATE ${jobs} SET run_at = MIN(run_at, ${now}, created_at) WHERE id = (SELECT id FROM ${jobs} WHERE lease_name = ${leaseName} AND status = 'pending' AND id <> ${exceptId} ORDER BY priority DESC, created_at ASC, id ASC LIMIT 1)`,
    upsertHost: ({ sql, hosts }, host, now, maxConcurrent, codeVersion) =>
      sql`INSERT INTO ${hosts} (host, last_seen_at, started_at, running, max_concurrent, draining, code_version) VALUES (${host}, ${now}, ${now}, 0, ${maxConcurrent}, 0, ${codeVersion}) ON CONFLICT (host) DO UPDATE SET last_seen_at = excluded.last_seen_at, max_concurrent = excluded.max_concurrent, code_version = excluded.code_version`,
    ensureHost: ({ sql, hosts }, host, now) =>
      sql`INSERT INTO ${hosts} (host, last_seen_at, started_at, running, max_concurrent, draining) VALUES (${host}, ${now}, ${now}, 0, 0, 0) ON CONFLICT (host) DO NOTHING`,
    // json_remove drops the oldest record once the history is full; CAST keeps the end time an
    // integer in the JSON whatever type the driver binds it as.
    historyAppended: ({ sql }, e) =>
      sql`json_insert(CASE WHEN json_array_length(COALESCE(history, '[]')) >= ${
        literalInt(MAX_HISTORY)
      } THEN json_remove(history, '$[0]') ELSE COALESCE(history, '[]') END, '$[#]', json_object('attempt', attempts, 'startedAt', updated_at, 'endedAt', CAST(${e.endedAt} AS INTEGER), 'outcome', ${e.outcome}, 'error', ${e.error}, 'host', claimed_by))`
  },
  isTransient: (cause) => ["SQLITE_BUSY", "SQLITE_BUSY_SNAPSHOT"].includes(errorCode(cause) ?? ""),
  isDuplicateKey: (cause) =>
    ["SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY"].includes(errorCode(cause) ?? ""),
  // In-process: there is no connection to lose.
  isDisconnect: () => false,
  affectedRows: (raw) => Number((raw as { changes?: number }).changes ?? 0)
}
