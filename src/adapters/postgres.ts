/**
 * PostgreSQL: every statement that is PostgreSQL's own. Placeholders are `$1…`; BIGINT comes
 * back as a string; row counts are `rowCount`.
 */
import { type Dialect, errorCode, JOB_COLUMNS, type Syntax, sqlFor } from "./sql.ts"

const syntax: Syntax = {
  name: "pg",
  placeholder: (n) => `$${n}`,
  quote: (id) => `"${id}"`
}
const sql = sqlFor(syntax)

/** The PostgreSQL dialect. */
export const postgres: Dialect = {
  syntax,
  lease: {
    createTable: (t) =>
      sql`CREATE TABLE IF NOT EXISTS ${t} (
  lockname VARCHAR(100) NOT NULL PRIMARY KEY,
  lockowner VARCHAR(64) NOT NULL,
  lockhost VARCHAR(255),
  acquiredat BIGINT NOT NULL,
  expiresat BIGINT NOT NULL
)`,
    tableExists: (name) =>
      sql`SELECT 1 AS present FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ${name}`,
    // ON CONFLICT DO NOTHING: a name inserted meanwhile by someone else is no error, so an
    // enclosing transaction is never aborted by a duplicate key.
    insert: (t, row) =>
      sql`INSERT INTO ${t} (lockname, lockowner, lockhost, acquiredat, expiresat) VALUES (${row.name}, ${row.owner}, ${row.host}, ${row.acquiredAt}, ${row.expiresAt}) ON CONFLICT (lockname) DO NOTHING`
  },
  jobs: {
    insert: ({ sql, jobs }, j) =>
      sql`INSERT INTO ${jobs} (id, name, queue, payload, priority, status, attempts, max_retries, claim_timeout, unique_key, run_at, created_at, updated_at) VALUES (${j.id}, ${j.name}, ${j.queue}, ${j.payload}, ${j.priority}, 'pending', 0, ${j.maxRetries}, ${j.claimTimeout}, ${j.uniqueKey}, ${j.runAt}, ${j.now}, ${j.now}) ON CONFLICT (unique_key) DO NOTHING`,
    // One statement: the subquery locks the best due row, skipping rows other claimers hold.
    claimReturning: ({ sql, jobs }, { set, due, capped }) =>
      sql`UPDATE ${jobs} SET ${set} WHERE id = (SELECT id FROM ${jobs} WHERE ${due} ORDER BY priority DESC, run_at ASC LIMIT 1 FOR UPDATE SKIP LOCKED)${capped} RETURNING ${JOB_COLUMNS}`,
    lockHost: ({ sql, hosts }, host) => sql`SELECT host FROM ${hosts} WHERE host = ${host} FOR UPDATE`,
    handOff: ({ sql, jobs }, leaseName, now) =>
      sql`UPDATE ${jobs} SET run_at = LEAST(run_at, ${now}) WHERE id = (SELECT id FROM ${jobs} WHERE lease_name = ${leaseName} AND status = 'pending' ORDER BY priority DESC, created_at ASC LIMIT 1 FOR UPDATE SKIP LOCKED)`,
    upsertHost: ({ sql, hosts }, host, now, maxConcurrent, codeVersion) =>
      sql`INSERT INTO ${hosts} (host, last_seen_at, started_at, running, max_concurrent, draining, code_version) VALUES (${host}, ${now}, ${now}, 0, ${maxConcurrent}, 0, ${codeVersion}) ON CONFLICT (host) DO UPDATE SET last_seen_at = EXCLUDED.last_seen_at, max_concurrent = EXCLUDED.max_concurrent, code_version = EXCLUDED.code_version`,
    ensureHost: ({ sql, hosts }, host, now) =>
      sql`INSERT INTO ${hosts} (host, last_seen_at, started_at, running, max_concurrent, draining) VALUES (${host}, ${now}, ${now}, 0, 0, 0) ON CONFLICT (host) DO NOTHING`,
    // SELECT pg_notify: a parameterised NOTIFY is rejected, and this form is delivered only
    // when the surrounding transaction commits.
    notify: ({ sql }, channel, payload) => sql`SELECT pg_notify(${channel}, ${payload})`
  },
  isTransient: (cause) => ["40P01", "40001"].includes(errorCode(cause) ?? ""),
  affectedRows: (raw) => Number((raw as { rowCount?: number | null }).rowCount ?? 0)
}
