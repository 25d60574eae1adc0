/**
 * MySQL / MariaDB: every statement that is MySQL's own. Placeholders are `?`; row counts are
 * `affectedRows` (mysql2 counts matched rows). Tables use utf8mb4 with a binary collation so
 * names compare exactly as written (the server default is case-insensitive).
 */
import { MAX_HISTORY } from "../../core/history.ts"
import { JOB_COLUMNS, newJobRows } from "../sql/columns.ts"
import type { Dialect, JobSqlContext } from "../sql/dialect.ts"
import { errorCode, isNetworkError } from "../sql/driverErrors.ts"
import { NEXT_READ_COMMITTED } from "../sql/transaction.ts"
import { literalInt, RawSql, SqlList, type Syntax, sqlFor } from "../sql/statement.ts"

const syntax: Syntax = {
  name: "mysql",
  placeholder: () => "?",
  quote: (id) => `\`${id}\``
}
const sql = sqlFor(syntax)

// Makes the next statement's transaction READ COMMITTED (src/adapters/sql/transaction.ts).
const nextReadCommitted = new RawSql(NEXT_READ_COMMITTED)

// The best waiter on a lease made due now in its place (core's applyHandOff); `also` narrows the WHERE further.
const handOffWhere = ({ sql, jobs }: JobSqlContext, leaseName: string, now: number, exceptId: string, also: RawSql) =>
  sql`UPDATE ${jobs} SET run_at = LEAST(run_at, ${now}, created_at) WHERE lease_name = ${leaseName} AND status = 'pending' AND id <> ${exceptId}${also} ORDER BY priority DESC, created_at ASC, id ASC LIMIT 1`

/** The MySQL / MariaDB dialect. */
export const mysql: Dialect = {
  syntax,
  inProcess: false,
  lease: {
    createTable: (t) =>
      sql`CREATE TABLE IF NOT EXISTS ${t} (
  lockname VARCHAR(100) NOT NULL PRIMARY KEY,
  lockowner VARCHAR(64) NOT NULL,
  lockhost VARCHAR(255),
  acquiredat BIGINT NOT NULL,
  expiresat BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
    tableExists: (name) =>
      sql`SELECT 1 AS present FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ${name}`,
    // A plain INSERT: a duplicate key fails the statement but, unlike PostgreSQL, does not
    // abort an enclosing transaction; the caller then reads the row and tries a take-over.
    insert: (t, row) =>
      sql`INSERT INTO ${t} (lockname, lockowner, lockhost, acquiredat, expiresat) VALUES (${row.name}, ${row.owner}, ${row.host}, ${row.acquiredAt}, ${row.expiresAt})`,
    // `packed`: `@lh_got` is 1 unless the INSERT met a row, where the first assignment of its
    // UPDATE sets it to whether that row expired strictly before now; the later assignments
    // (MySQL assigns left to right, `expiresat` last) take the row over only then. The row lock
    // the INSERT holds queues concurrent callers of one name, who then see the winner's row. The
    // counter is bumped only by the winner, in the same transaction. The last SELECT is a locking
    // read, so inside a caller's REPEATABLE READ transaction too it sees the latest owner.
    acquire: {
      kind: "readThenInsert",
      packed: (t, tokens, row) =>
        sql`SET @lh_got = 1; INSERT INTO ${t} (lockname, lockowner, lockhost, acquiredat, expiresat) VALUES (${row.name}, ${row.owner}, ${row.host}, ${row.acquiredAt}, ${row.expiresAt}) ON DUPLICATE KEY UPDATE lockowner = IF((@lh_got := expiresat < VALUES(acquiredat)), VALUES(lockowner), lockowner), lockhost = IF(@lh_got, VALUES(lockhost), lockhost), acquiredat = IF(@lh_got, VALUES(acquiredat), acquiredat), expiresat = IF(@lh_got, VALUES(expiresat), expiresat); INSERT INTO ${tokens} (lockname, token) SELECT ${row.name}, 1 FROM DUAL WHERE @lh_got = 1 ON DUPLICATE KEY UPDATE token = token + 1; SELECT @lh_got AS got, l.lockowner, k.token FROM ${t} l LEFT JOIN ${tokens} k ON k.lockname = l.lockname WHERE l.lockname = ${row.name} LOCK IN SHARE MODE`
    },
    createTokensTable: (tokens) =>
      sql`CREATE TABLE IF NOT EXISTS ${tokens} (
  lockname VARCHAR(100) NOT NULL PRIMARY KEY,
  token BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
    // Run inside the acquisition's transaction: the SELECT sees the row the INSERT just wrote.
    bumpToken: (tokens, name) => [
      sql`INSERT INTO ${tokens} (lockname, token) VALUES (${name}, 1) ON DUPLICATE KEY UPDATE token = token + 1`,
      sql`SELECT token FROM ${tokens} WHERE lockname = ${name}`
    ]
  },
  fences: {
    createTable: (t) =>
      sql`CREATE TABLE IF NOT EXISTS ${t} (
  resource VARCHAR(255) NOT NULL PRIMARY KEY,
  token BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
    // ON DUPLICATE KEY UPDATE takes an exclusive lock on a duplicate row (a plain INSERT a shared
    // one, which two guards would then both try to upgrade: a deadlock); the locking read sees the
    // latest row, not the transaction's snapshot.
    record: (t, resource, token) => [
      sql`INSERT INTO ${t} (resource, token) VALUES (${resource}, ${token}) ON DUPLICATE KEY UPDATE token = GREATEST(token, VALUES(token))`,
      sql`SELECT token FROM ${t} WHERE resource = ${resource} FOR UPDATE`
    ]
  },
  jobs: {
    // A plain INSERT: a taken unique key fails it (without aborting a transaction); the store
    // then finds the existing job by its key.
    insert: (c, j) => c.sql`INSERT INTO ${c.jobs} ${newJobRows(c, [j])}`,
    // `id = id` changes nothing: a row whose key is taken is skipped without an error (which,
    // in one multi-row INSERT, would fail every row). mysql2 counts matched rows, so the count
    // cannot tell a skipped row from an inserted one: the store reads the keys back.
    insertMany: (c, jobs) => c.sql`INSERT INTO ${c.jobs} ${newJobRows(c, jobs)} ON DUPLICATE KEY UPDATE id = id`,
    // A plain read inside the caller's REPEATABLE READ transaction sees its snapshot, which may
    // predate the row that took the key; a locking read sees the latest committed row.
    latestRead: new RawSql(" LOCK IN SHARE MODE"),
    // No UPDATE … RETURNING: the store locks due rows with pickDue (reading all of them), updates
    // them by id and applies the same change to the rows it read. The claim index must drive the
    // scan: with a filesort, InnoDB locks every due row it reads before LIMIT applies, and
    // concurrent claimers then skip them all and find nothing.
    claim: {
      kind: "lockThenUpdate",
      pickDue: ({ sql, jobs, claimIndex }, due, limit) =>
        sql`SELECT ${JOB_COLUMNS} FROM ${jobs} FORCE INDEX (${claimIndex}) WHERE ${due} ORDER BY priority DESC, run_at ASC LIMIT ${limit} FOR UPDATE SKIP LOCKED`,
      // The same locking read as a derived table (it locks and skips as pickDue does), numbered
      // best first (k), one per key where asked; the UPDATE joins it by id and gives row k the
      // k-th token. No UPDATE … RETURNING, so the rows are read back by their tokens, through
      // the (claimed_by, status) index.
      packed: {
        token: ({ sql }, tokens) => sql`ELT(p.k, ${new SqlList(tokens)})`,
        statement: ({ sql, jobs, claimIndex }, { set, due, limit, onePerKey }, host, tokens) => {
          const window =
            sql`SELECT id, priority, run_at, claim_lease FROM ${jobs} FORCE INDEX (${claimIndex}) WHERE ${due} ORDER BY priority DESC, run_at ASC LIMIT ${limit} FOR UPDATE SKIP LOCKED`
          const picked = onePerKey
            ? sql`SELECT id, priority, run_at FROM (SELECT id, priority, run_at, ROW_NUMBER() OVER (PARTITION BY claim_lease, CASE WHEN claim_lease IS NULL THEN id END ORDER BY priority DESC, run_at ASC) AS n FROM (${window}) AS w) AS o WHERE n = 1`
            : window
          return sql`UPDATE ${jobs} AS j JOIN (SELECT id, ROW_NUMBER() OVER (ORDER BY priority DESC, run_at ASC, id ASC) AS k FROM (${picked}) AS b) AS p ON j.id = p.id SET ${set}; SELECT ${JOB_COLUMNS} FROM ${jobs} WHERE claimed_by = ${host} AND status = 'processing' AND claim_token IN (${new SqlList(
            tokens
          )})`
        }
      }
    },
    // The host row is locked by a write that always changes it (last_seen_at moves on by at
    // least 1 ms), not by SELECT … FOR UPDATE: on a Galera cluster row locks stay on their node
    // and only written rows are certified, so two claims for one host on two nodes would both
    // see room under the cap (docs/scale-out.md). On one server it is the same row lock.
    hostCap: {
      kind: "lockHostRow",
      lockHost: ({ sql, hosts }, host, now) =>
        sql`UPDATE ${hosts} SET last_seen_at = GREATEST(last_seen_at + 1, ${now}) WHERE host = ${host}`
    },
    // Nothing tells a MySQL client of another's commit. The probe reads the first due job's id
    // through the claim index, without a lock or a transaction: one plain read where a claim is a
    // transaction that locks. A changed id is a job the worker has not seen (docs/behaviour.md §9).
    wakeups: {
      kind: "poll",
      probe: {
        everyMs: 200,
        statement: ({ sql, jobs }, _input, due) =>
          sql`SELECT id FROM ${jobs} WHERE ${due} ORDER BY priority DESC, run_at ASC LIMIT 1`
      }
    },
    // `packed`: the outcome at READ COMMITTED (as the store's own writes), the owner-fenced
    // release, and the hand-off only if the release deleted a row (`@lh_released`); ROW_COUNT()
    // counts matched rows, as mysql2's affectedRows does.
    finish: {
      kind: "steps",
      packed: (c, f) =>
        c.sql`${nextReadCommitted}; ${f.outcome}; SET @lh_written = ROW_COUNT(); DELETE FROM ${c.jobLocks} WHERE lockname = ${f.leaseName} AND lockowner = ${f.owner}; SET @lh_released = ROW_COUNT(); ${nextReadCommitted}; ${
          handOffWhere(
            c,
            f.leaseName,
            f.now,
            f.id,
            new RawSql(f.handOff ? " AND @lh_released > 0" : " AND @lh_released > 0 AND 0 = 1")
          )
        }; SELECT @lh_written AS written, @lh_released AS released, ROW_COUNT() AS woke`,
      // The body of one transaction (src/adapters/sql/transaction.ts `packedTransaction`): the
      // outcome, the owner-fenced move, and the bump of the name's token counter only if it moved.
      packedTransfer: (c, f) =>
        c.sql`${f.outcome}; SET @lh_written = ROW_COUNT(); ${f
          .transfer!}; SET @lh_moved = ROW_COUNT(); INSERT INTO ${c.jobLockTokens} (lockname, token) SELECT ${f.leaseName}, 1 FROM DUAL WHERE @lh_moved > 0 ON DUPLICATE KEY UPDATE token = token + 1; SELECT @lh_written AS written, @lh_moved AS released, 0 AS woke, IF(@lh_moved > 0, (SELECT token FROM ${c.jobLockTokens} WHERE lockname = ${f.leaseName}), NULL) AS transferred`
    },
    updateReports: "count",
    isolation: "readCommitted",
    // MySQL cannot select from the table it updates; a single-table UPDATE takes ORDER BY and LIMIT.
    handOff: (c, leaseName, now, exceptId) => handOffWhere(c, leaseName, now, exceptId, new RawSql("")),
    upsertHost: ({ sql, hosts }, host, now, maxConcurrent, codeVersion) =>
      sql`INSERT INTO ${hosts} (host, last_seen_at, started_at, running, max_concurrent, draining, code_version) VALUES (${host}, ${now}, ${now}, 0, ${maxConcurrent}, 0, ${codeVersion}) ON DUPLICATE KEY UPDATE last_seen_at = VALUES(last_seen_at), max_concurrent = VALUES(max_concurrent), code_version = VALUES(code_version)`,
    ensureHost: ({ sql, hosts }, host, now) =>
      sql`INSERT INTO ${hosts} (host, last_seen_at, started_at, running, max_concurrent, draining) VALUES (${host}, ${now}, ${now}, 0, 0, 0) ON DUPLICATE KEY UPDATE host = host`,
    // JSON_REMOVE drops the oldest record once the history is full; CAST keeps the end time an
    // integer in the JSON whatever type the driver sends it as.
    historyAppended: ({ sql }, e) =>
      sql`JSON_ARRAY_APPEND(CASE WHEN JSON_LENGTH(COALESCE(history, '[]')) >= ${
        literalInt(MAX_HISTORY)
      } THEN JSON_REMOVE(history, '$[0]') ELSE COALESCE(history, '[]') END, '$', JSON_OBJECT('attempt', attempts, 'startedAt', updated_at, 'endedAt', CAST(${e.endedAt} AS SIGNED), 'outcome', ${e.outcome}, 'error', ${e.error}, 'host', claimed_by))`
  },
  // On a Galera cluster a transaction that loses certification (another node committed a write
  // to the same row first: two claims of one job, two inserts of one lease) fails at COMMIT, or
  // an autocommit statement fails, with ER_LOCK_DEADLOCK (1213) and is rolled back whole, like
  // an InnoDB deadlock victim: the same transient rule applies (docs/scale-out.md).
  isTransient: (cause) => ["ER_LOCK_DEADLOCK", "ER_LOCK_WAIT_TIMEOUT"].includes(errorCode(cause) ?? ""),
  isDuplicateKey: (cause) => errorCode(cause) === "ER_DUP_ENTRY",
  // mysql2 marks an error that ended the connection `fatal`; the codes cover a refused connect.
  // A Galera node outside the primary component refuses every statement with 1047 ("WSREP has
  // not yet prepared node for application use"), and a commit cut off by losing the primary
  // component fails with ER_ERROR_DURING_COMMIT: another node may serve the statement, and a
  // fenced one may be sent again (its outcome is unknown in the second case).
  isDisconnect: (cause) =>
    (cause as { fatal?: unknown } | null)?.fatal === true || isNetworkError(cause) ||
    ["PROTOCOL_CONNECTION_LOST", "PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR", "ER_SERVER_SHUTDOWN", "ER_CON_COUNT_ERROR"]
      .includes(errorCode(cause) ?? "") ||
    isWsrepUnavailable(cause),
  affectedRows: (raw) => Number((raw as { affectedRows?: number }).affectedRows ?? 0)
}

/** A Galera node that cannot serve statements now (not in the primary component, or lost it at COMMIT). */
const isWsrepUnavailable = (cause: unknown): boolean => {
  const code = errorCode(cause)
  return (code === "ER_UNKNOWN_COM_ERROR" && /WSREP/.test(String((cause as { message?: unknown }).message))) ||
    code === "ER_ERROR_DURING_COMMIT"
}
