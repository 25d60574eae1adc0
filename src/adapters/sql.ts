/**
 * The SQL that every dialect shares, and the small helpers the dialect files build on.
 *
 * A `Statement` is SQL text plus its parameters, with the dialect's own placeholders
 * (`$1` on PostgreSQL, `?` on MySQL and SQLite), ready for `sql.unsafe(text, params)`.
 * Statements that read the same on all three databases are written once here; whatever
 * differs (DDL, conflict-free insert, catalog queries, row counts) sits in the dialect's file.
 */
import type { ReapDecision } from "../core/jobs.ts"
import type { LeaseRow } from "../core/lease.ts"
import type { ClaimInput, JobFilter, NewJob } from "./JobStore.ts"
import type { TableNames } from "./tables.ts"

/** SQL text and its bound parameters. */
export interface Statement {
  readonly sql: string
  readonly params: ReadonlyArray<unknown>
  /** The unrendered template, so a statement can be nested in another (placeholders renumbered). */
  readonly fragment?: Fragment
}

/** A template's pieces before rendering. */
export interface Fragment {
  readonly strings: ReadonlyArray<string>
  readonly values: ReadonlyArray<unknown>
}

const isNested = (v: unknown): v is Statement & { readonly fragment: Fragment } =>
  typeof v === "object" && v !== null && "fragment" in v && (v as Statement).fragment !== undefined

/** Raw SQL spliced into a statement as written (identifiers, never user values). */
export class RawSql {
  constructor(readonly text: string) {}
}

/** A list of values bound as one parameter each, for `IN (…)`. */
export class SqlList {
  constructor(readonly values: ReadonlyArray<unknown>) {}
}

/** A whole number spliced as text (MySQL refuses a bound LIMIT under prepared statements). */
export const literalInt = (n: number): RawSql => {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`not a non-negative integer: ${n}`)
  return new RawSql(String(n))
}

/** The pieces of syntax that differ between dialects, chosen once when a store is built. */
export interface Syntax {
  readonly name: "pg" | "mysql" | "sqlite"
  /** The placeholder for the n-th parameter, 1-based. */
  readonly placeholder: (n: number) => string
  /** Quotes an identifier that is already known to be safe (see `checkIdentifier`). */
  readonly quote: (identifier: string) => string
}

const render = (syntax: Syntax, fragment: Fragment, params: Array<unknown>): string => {
  let text = fragment.strings[0] ?? ""
  fragment.values.forEach((value, i) => {
    if (value instanceof RawSql) {
      text += value.text
    } else if (value instanceof SqlList) {
      text += value.values.map((v) => {
        params.push(v)
        return syntax.placeholder(params.length)
      }).join(", ")
    } else if (isNested(value)) {
      text += render(syntax, value.fragment, params)
    } else {
      params.push(value)
      text += syntax.placeholder(params.length)
    }
    text += fragment.strings[i + 1] ?? ""
  })
  return text
}

/** Statements joined with `separator` into one, for a list of conditions or CASE branches. */
export const joined = (parts: ReadonlyArray<Statement>, separator: string): Statement => {
  const strings = parts.length === 0 ? [""] : ["", ...parts.slice(1).map(() => separator), ""]
  const fragment: Fragment = { strings, values: parts }
  return { sql: "", params: [], fragment }
}

/**
 * A tagged template that turns `${value}` into a bound parameter, `${RawSql}` into text,
 * `${SqlList}` into a list of parameters and `${statement}` into that statement's SQL (its
 * placeholders renumbered), so SQL reads as SQL in the dialect files.
 */
export const sqlFor = (syntax: Syntax) => (strings: TemplateStringsArray, ...values: ReadonlyArray<unknown>): Statement => {
  const fragment: Fragment = { strings: [...strings], values }
  const params: Array<unknown> = []
  const sql = render(syntax, fragment, params)
  return { sql, params, fragment }
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

/** The lease-table statements (docs/behaviour.md §2) for one dialect and one table. */
export interface LeaseStatements {
  readonly table: string
  readonly owner: (name: string) => Statement
  readonly read: (name: string) => Statement
  /** Inserts a new lease; on PostgreSQL and SQLite a duplicate name inserts nothing instead of failing. */
  readonly insert: (row: LeaseRow) => Statement
  /**
   * Insert and take-over as one statement where the dialect has one (PostgreSQL, SQLite): inserts
   * the row, or takes over an existing one that expired strictly before `now`, and returns a row
   * only when it did either. It never raises a duplicate-key error.
   */
  readonly acquire: ((row: LeaseRow) => Statement) | undefined
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
  /** `INSERT … ON CONFLICT DO UPDATE … WHERE expired RETURNING`, where the database has it. */
  readonly acquire?: (table: RawSql, row: LeaseRow) => Statement
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
    acquire: dialect.acquire === undefined ? undefined : (row) => dialect.acquire!(t, row),
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
  readonly jobs: JobDialect
  /** Rows a statement changed, from the driver's `.raw` result. */
  readonly affectedRows: (raw: unknown) => number
  /**
   * Whether a driver error means "rolled back, try again" (a deadlock victim, a serialization
   * failure), so a statement or claim that ran on its own can safely be retried.
   */
  readonly isTransient: (cause: unknown) => boolean
  /**
   * Whether a driver error means the connection was lost or refused: the statement may or may
   * not have run, so only a statement fenced against running twice may be sent again.
   */
  readonly isDisconnect: (cause: unknown) => boolean
}

/** Socket-level error codes that Node's net module and both network drivers use. */
const NETWORK_CODES = new Set(["ECONNRESET", "ECONNREFUSED", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENOTFOUND", "EAI_AGAIN"])

/** Whether a cause (or the cause inside it) carries a socket-level error code. */
export const isNetworkError = (cause: unknown): boolean => {
  for (let c = cause, depth = 0; c !== null && typeof c === "object" && depth < 4; depth++) {
    if (NETWORK_CODES.has(errorCode(c) ?? "")) return true
    c = (c as { cause?: unknown }).cause
  }
  return false
}

/** The driver's error code, if it has one. */
export const errorCode = (cause: unknown): string | undefined => {
  const code = (cause as { code?: unknown } | null)?.code
  return typeof code === "string" ? code : undefined
}


// ---------------------------------------------------------------------------------------------
// Jobs and hosts

/** The columns of a job row, in table order. */
export const JOB_COLUMNS = new RawSql(
  "id, name, queue, payload, priority, status, attempts, max_retries, claim_timeout, claim_token, claimed_by, " +
    "unique_key, lease_name, heartbeat_at, last_error, run_at, completed_at, failed_at, created_at, updated_at"
)

/** The quoted tables and the builder a dialect's job statements are written with. */
export interface JobSqlContext {
  readonly sql: (strings: TemplateStringsArray, ...values: ReadonlyArray<unknown>) => Statement
  readonly jobs: RawSql
  readonly hosts: RawSql
  /** The lease table of exclusive jobs and concurrency keys. */
  readonly jobLocks: RawSql
  /** The claim index, (status, priority DESC, run_at), named after the jobs table. */
  readonly claimIndex: RawSql
}

/** The name of the claim index of a jobs table. */
export const claimIndexName = (jobsTable: string) => `${jobsTable}_claim`

/** What a claim writes and which rows it may take, for a dialect to wrap in its own form. */
export interface ClaimParts {
  /** `status = 'processing', attempts = attempts + 1, claim_token = …` */
  readonly set: Statement
  /** `status = 'pending' AND run_at <= … [AND queue IN (…)]` */
  readonly due: Statement
  /** With a host cap on SQLite: `AND (running count) < cap`, else empty. */
  readonly capped: Statement
  /** How many rows to claim at most. */
  readonly limit: RawSql
}

/** What a dialect file supplies for the jobs and hosts tables. */
export interface JobDialect {
  /** Inserts a job; where the database allows, a taken unique key inserts nothing instead of failing. */
  readonly insert: (c: JobSqlContext, job: NewJob) => Statement
  /** One statement that claims up to `limit` due rows and returns them (PostgreSQL, SQLite). */
  readonly claimReturning?: (c: JobSqlContext, parts: ClaimParts) => Statement
  /** A fresh claim token made by the database, one per row, for batch claims (PostgreSQL, SQLite). */
  readonly newToken?: RawSql
  /** Locks up to `limit` due rows for a claim inside a transaction, skipping rows others hold (MySQL). */
  readonly pickDue?: (c: JobSqlContext, due: Statement, limit: RawSql) => Statement
  /** Whether UPDATE can return the rows it changed (PostgreSQL, SQLite). */
  readonly updateReturning: boolean
  /**
   * Claims and job-row writes run at READ COMMITTED rather than the session's level (MySQL/MariaDB,
   * whose default REPEATABLE READ takes gap locks that let a claim and a completion deadlock).
   */
  readonly readCommitted?: true
  /** Locks the host row while counting and claiming under a host cap (PostgreSQL, MySQL). */
  readonly lockHost?: (c: JobSqlContext, host: string) => Statement
  /** Makes the best job waiting on a lease (highest priority, then oldest) due now. */
  readonly handOff: (c: JobSqlContext, leaseName: string, now: number) => Statement
  /** Inserts a host row or refreshes it. */
  readonly upsertHost: (c: JobSqlContext, host: string, now: number, maxConcurrent: number, codeVersion: string | null) => Statement
  /** Inserts a host row if it is missing. */
  readonly ensureHost: (c: JobSqlContext, host: string, now: number) => Statement
  /**
   * Inserts a job and wakes listening workers in one statement, returning the row's id only if
   * it was inserted (PostgreSQL: the notification goes out when the statement's transaction commits).
   */
  readonly insertNotify?: (c: JobSqlContext, job: NewJob, channel: string) => Statement
  /** Wakes listening workers, inside the current transaction (PostgreSQL). */
  readonly notify?: (c: JobSqlContext, channel: string, payload: string) => Statement
  /**
   * One statement that ends an exclusive attempt (PostgreSQL): writes `outcome` (fenced on the
   * claim token), releases the lease (owner-fenced) and, only if it did, hands off to the best
   * waiting job and wakes listeners. Returns one row: written, released, woke (counts).
   */
  readonly finish?: (c: JobSqlContext, f: FinishParts) => Statement
}

/** The pieces of a one-statement finish. */
export interface FinishParts {
  /** The fenced outcome UPDATE, without RETURNING. */
  readonly outcome: Statement
  readonly leaseName: string
  /** The attempt's claim token, which owns the lease. */
  readonly owner: string
  readonly now: number
  readonly channel: string
}

/** What an attempt's outcome writes (fenced on its claim token). */
export type Outcome =
  | { readonly _tag: "Complete" }
  | { readonly _tag: "Retry"; readonly runAt: number; readonly error: string }
  | { readonly _tag: "Kill"; readonly error: string }

/** The job and host statements for one dialect and one table prefix. */
export const jobStatements = (dialect: Dialect, tables: TableNames) => {
  const sql = sqlFor(dialect.syntax)
  const jobs = new RawSql(dialect.syntax.quote(checkIdentifier(tables.jobs)))
  const hosts = new RawSql(dialect.syntax.quote(checkIdentifier(tables.hosts)))
  const jobLocks = new RawSql(dialect.syntax.quote(checkIdentifier(tables.jobLocks)))
  const c: JobSqlContext = { sql, jobs, hosts, jobLocks, claimIndex: new RawSql(dialect.syntax.quote(claimIndexName(tables.jobs))) }
  const d = dialect.jobs
  const cols = JOB_COLUMNS
  const empty = sql``

  const countRunning = (host: string) =>
    sql`SELECT COUNT(*) AS n FROM ${jobs} WHERE claimed_by = ${host} AND status = 'processing'`
  // Pending, due, in the worker's queues.
  const due = (input: ClaimInput) =>
    input.queues === undefined
      ? sql`status = 'pending' AND run_at <= ${input.now}`
      : sql`status = 'pending' AND run_at <= ${input.now} AND queue IN (${new SqlList(input.queues)})`
  // A fresh token, this host, attempts + 1, no heartbeat, and the timeout capped by the worker's.
  const claimSet = (input: ClaimInput, token: unknown = input.claimToken) =>
    input.timeoutCap === undefined
      ? sql`status = 'processing', attempts = attempts + 1, claim_token = ${token}, claimed_by = ${input.host}, heartbeat_at = NULL, updated_at = ${input.now}`
      : sql`status = 'processing', attempts = attempts + 1, claim_token = ${token}, claimed_by = ${input.host}, heartbeat_at = NULL, updated_at = ${input.now}, claim_timeout = CASE WHEN claim_timeout IS NULL OR claim_timeout > ${input.timeoutCap} THEN ${input.timeoutCap} ELSE claim_timeout END`
  // Stale: last seen (heartbeat, else last update) more than t + max(60, t) seconds ago.
  // Timeouts are at most MAX_TIMEOUT_SECONDS, so the grace in ms fits a 32-bit integer.
  const staleAt = (now: number, timeout: number) =>
    sql`status = 'processing' AND COALESCE(heartbeat_at, updated_at) + (COALESCE(claim_timeout, ${timeout}) + CASE WHEN COALESCE(claim_timeout, ${timeout}) > 60 THEN COALESCE(claim_timeout, ${timeout}) ELSE 60 END) * 1000 < ${now}`
  const outcome = (id: string, token: string, now: number, o: Outcome): Statement => {
    const ours = sql`WHERE id = ${id} AND status = 'processing' AND claim_token = ${token}`
    switch (o._tag) {
      case "Complete":
        return sql`UPDATE ${jobs} SET status = 'completed', completed_at = ${now}, updated_at = ${now} ${ours}`
      case "Retry":
        return sql`UPDATE ${jobs} SET status = 'pending', run_at = ${o.runAt}, last_error = ${o.error}, claim_token = NULL, updated_at = ${now} ${ours}`
      case "Kill":
        return sql`UPDATE ${jobs} SET status = 'failed', failed_at = ${now}, last_error = ${o.error}, updated_at = ${now} ${ours}`
    }
  }
  const reapGuard = (row: { readonly id: string; readonly attempts: number }, now: number, timeout: number) =>
    sql`WHERE id = ${row.id} AND attempts = ${row.attempts} AND ${staleAt(now, timeout)}`

  return {
    insert: (job: NewJob) => d.insert(c, job),
    insertNotify: d.insertNotify === undefined ? undefined : (job: NewJob) => d.insertNotify!(c, job, tables.channel),
    idByUniqueKey: (key: string) => sql`SELECT id FROM ${jobs} WHERE unique_key = ${key}`,
    byId: (id: string) => sql`SELECT ${cols} FROM ${jobs} WHERE id = ${id}`,
    claimReturning: d.claimReturning === undefined ? undefined : (input: ClaimInput, cap?: number) =>
      d.claimReturning!(c, {
        set: claimSet(input),
        due: due(input),
        capped: cap === undefined ? empty : sql` AND (${countRunning(input.host)}) < ${cap}`,
        limit: literalInt(1)
      }),
    /** Claims up to `limit` rows, each with a token the database makes (PostgreSQL, SQLite). */
    claimBatchReturning: d.claimReturning === undefined || d.newToken === undefined ? undefined : (input: ClaimInput, limit: number) =>
      d.claimReturning!(c, { set: claimSet(input, d.newToken), due: due(input), capped: empty, limit: literalInt(limit) }),
    pickDue: (input: ClaimInput, limit = 1) => d.pickDue!(c, due(input), literalInt(limit)),
    /** Claims the locked rows `ids` with one token each (MySQL's batch claim). */
    claimByIds: (input: ClaimInput, rows: ReadonlyArray<{ readonly id: string; readonly token: string }>) =>
      sql`UPDATE ${jobs} SET ${claimSet(input, sql`CASE ${joined(rows.map((r) => sql`WHEN id = ${r.id} THEN ${r.token}`), " ")} END`)} WHERE id IN (${new SqlList(rows.map((r) => r.id))}) AND status = 'pending'`,
    /**
     * Completes several attempts at once, each fenced on its own token; where the database can,
     * returns the id and token of each row it completed (two attempts of one job may meet here).
     */
    completeBatch: (items: ReadonlyArray<{ readonly id: string; readonly token: string }>, now: number) =>
      sql`UPDATE ${jobs} SET status = 'completed', completed_at = ${now}, updated_at = ${now} WHERE status = 'processing' AND (${
        joined(items.map((i) => sql`(id = ${i.id} AND claim_token = ${i.token})`), " OR ")
      })${d.updateReturning ? sql` RETURNING id, claim_token` : empty}`,
    /** The id and token of each of `ids` that is completed, to tell which of a batch were ours. */
    completedOf: (ids: ReadonlyArray<string>) =>
      sql`SELECT id, claim_token FROM ${jobs} WHERE status = 'completed' AND id IN (${new SqlList(ids)})`,
    countRunning,
    lockHost: d.lockHost === undefined ? undefined : (host: string) => d.lockHost!(c, host),
    ensureHost: (host: string, now: number) => d.ensureHost(c, host, now),
    outcome,
    /** Releases an attempt's job lease (owner-fenced). */
    releaseLease: (leaseName: string, owner: string) =>
      sql`DELETE FROM ${jobLocks} WHERE lockname = ${leaseName} AND lockowner = ${owner}`,
    finish: d.finish === undefined ? undefined : (id: string, token: string, now: number, o: Outcome, leaseName: string) =>
      d.finish!(c, { outcome: outcome(id, token, now, o), leaseName, owner: token, now, channel: tables.channel }),
    defer: (id: string, token: string, now: number, runAt: number, leaseName: string) =>
      sql`UPDATE ${jobs} SET status = 'pending', attempts = attempts - 1, run_at = ${runAt}, claim_token = NULL, lease_name = ${leaseName}, updated_at = ${now} WHERE id = ${id} AND status = 'processing' AND claim_token = ${token} AND attempts > 0`,
    heartbeat: (id: string, token: string, now: number) =>
      sql`UPDATE ${jobs} SET heartbeat_at = ${now} WHERE id = ${id} AND status = 'processing' AND claim_token = ${token}`,
    stale: (now: number, timeout: number, limit: number) =>
      sql`SELECT ${cols} FROM ${jobs} WHERE ${staleAt(now, timeout)} ORDER BY updated_at ASC LIMIT ${literalInt(limit)}`,
    reap: (row: { readonly id: string; readonly attempts: number }, decision: ReapDecision, now: number, timeout: number) => {
      const guard = reapGuard(row, now, timeout)
      switch (decision._tag) {
        case "Retry":
          return sql`UPDATE ${jobs} SET status = 'pending', run_at = ${decision.runAt}, claim_token = NULL, last_error = ${REAPED_RETRY}, updated_at = ${now} ${guard}`
        case "Dead":
          return sql`UPDATE ${jobs} SET status = 'failed', failed_at = ${now}, claim_token = NULL, last_error = ${REAPED_DEAD}, updated_at = ${now} ${guard}`
        case "Interrupted":
          return sql`UPDATE ${jobs} SET status = 'interrupted', failed_at = ${now}, claim_token = NULL, last_error = ${decision.message}, updated_at = ${now} ${guard}`
      }
    },
    handOff: (leaseName: string, now: number) => d.handOff(c, leaseName, now),
    notify: d.notify === undefined ? undefined : (payload: string) => d.notify!(c, tables.channel, payload),
    list: (f: JobFilter) =>
      sql`SELECT ${cols} FROM ${jobs} WHERE 1 = 1${f.status === undefined ? empty : sql` AND status = ${f.status}`}${
        f.queue === undefined ? empty : sql` AND queue = ${f.queue}`
      }${f.name === undefined ? empty : sql` AND name = ${f.name}`} ORDER BY created_at DESC, id ASC LIMIT ${literalInt(f.limit)}`,
    counts: sql`SELECT queue, status, COUNT(*) AS n FROM ${jobs} GROUP BY queue, status ORDER BY queue, status`,
    retryDead: (id: string, now: number) =>
      sql`UPDATE ${jobs} SET status = 'pending', attempts = 0, run_at = ${now}, claim_token = NULL, failed_at = NULL, updated_at = ${now} WHERE id = ${id} AND status IN ('failed', 'interrupted')`,
    purge: (status: "completed" | "failed" | "interrupted", before: number) =>
      status === "completed"
        ? sql`DELETE FROM ${jobs} WHERE status = 'completed' AND completed_at < ${before}`
        : sql`DELETE FROM ${jobs} WHERE status = ${status} AND failed_at < ${before}`,
    upsertHost: (host: string, now: number, f: { readonly maxConcurrent: number; readonly codeVersion: string | null }) =>
      d.upsertHost(c, host, now, f.maxConcurrent, f.codeVersion),
    hostByName: (host: string) => sql`SELECT * FROM ${hosts} WHERE host = ${host}`,
    listHosts: sql`SELECT * FROM ${hosts} ORDER BY host`,
    drain: (host: string, now: number, expiresAt: number | null) =>
      sql`UPDATE ${hosts} SET draining = 1, drain_expires_at = ${expiresAt}, last_seen_at = ${now} WHERE host = ${host}`,
    resume: (host: string, now: number) =>
      sql`UPDATE ${hosts} SET draining = 0, drain_expires_at = NULL, last_seen_at = ${now} WHERE host = ${host}`
  }
}

/** `last_error` of a row the reaper sent back to pending. */
export const REAPED_RETRY = "reaped: no sign of life within its grace (worker gone or stuck); retrying"
/** `last_error` of a row the reaper marked dead. */
export const REAPED_DEAD = "reaped: no sign of life within its grace (worker gone or stuck); retries used up"
