/**
 * PostgreSQL: every statement that is PostgreSQL's own. Placeholders are `$1…`; BIGINT comes
 * back as a string; row counts are `rowCount`.
 */
import { MAX_HISTORY } from "../../core/history.ts"
import type { NewJob } from "../../core/model.ts"
import { JOB_COLUMNS, NEW_JOB_COLUMNS, newJobRecord, newJobRows } from "../sql/columns.ts"
import type { ClaimParts, Dialect, JobSqlContext } from "../sql/dialect.ts"
import { errorCode, isNetworkError } from "../sql/driverErrors.ts"
import { literalInt, RawSql, type Statement, type Syntax, sqlFor } from "../sql/statement.ts"

const syntax: Syntax = {
  name: "pg",
  placeholder: (n) => `$${n}`,
  quote: (id) => `"${id}"`
}
const sql = sqlFor(syntax)

// A taken unique key inserts nothing (no error, so an enclosing transaction stays usable).
const insert = (c: JobSqlContext, j: NewJob) =>
  c.sql`INSERT INTO ${c.jobs} ${newJobRows(c, [j])} ON CONFLICT (unique_key) DO NOTHING`
// Many rows as one JSON parameter, read as rows of the jobs table's own type: one value to bind
// and one text to parse, whatever the batch's size. As a VALUES list, 1,000 rows were 13,000
// parameters, whose bind alone took longer than the insert (graphile-worker sends its batch this
// way too).
const insertMany = (c: JobSqlContext, jobs: ReadonlyArray<NewJob>) =>
  c.sql`INSERT INTO ${c.jobs} (${NEW_JOB_COLUMNS}) SELECT ${NEW_JOB_COLUMNS} FROM json_populate_recordset(NULL::${c.jobs}, ${
    JSON.stringify(jobs.map(newJobRecord))
  }) ON CONFLICT (unique_key) DO NOTHING RETURNING id, queue`

// Inserts the lease rows `rows` gives (a VALUES list or a SELECT), or takes over a lease that
// expired strictly before the row's acquiredat: the acquisition's one rule, for one lease (the
// acquire statement) or for the leases of a claim's jobs.
const insertOrTakeOver = (t: RawSql, rows: Statement, returning: string) =>
  sql`INSERT INTO ${t} (lockname, lockowner, lockhost, acquiredat, expiresat) ${rows} ON CONFLICT (lockname) DO UPDATE SET lockowner = EXCLUDED.lockowner, lockhost = EXCLUDED.lockhost, acquiredat = EXCLUDED.acquiredat, expiresat = EXCLUDED.expiresat WHERE ${t}.expiresat < EXCLUDED.acquiredat RETURNING ${new RawSql(
    returning
  )}`
// Adds 1 to the token counter of each name `names` gives as (lockname, 1), from 1 where it has none.
const bumpTokens = (tokens: RawSql, names: Statement, returning: string) =>
  sql`INSERT INTO ${tokens} (lockname, token) ${names} ON CONFLICT (lockname) DO UPDATE SET token = ${tokens}.token + 1 RETURNING ${new RawSql(
    returning
  )}`

// The claim, alone or inside the claim that takes leases (why `LIMIT (SELECT n)`: `claim` below).
// One per key: of the rows locked, the best of each `claim_lease` (rows without one are each
// their own); the others stay pending, their locks let go at the statement's end.
// `id = ANY(ARRAY(…))`, not `id IN (…)`: the picked ids become one array, and the UPDATE finds
// them by primary key whatever the statistics say. The hidden limit is costed as a tenth of the
// due rows, and with statistics that show a large queue (autovacuum analyzed it) `IN` was planned
// as a hash join over a scan of the whole jobs table, once per claim: a drain of 20,000 jobs
// analyzed before it began ran far slower (test/integration/claim-plan.test.ts). The exception
// is a table the planner takes for small (a few dozen pages, or not analyzed yet): costing the
// array it cannot see as ten lookups, it reads such a table whole instead, a cost that stops growing where the lookups
// become the cheaper plan.
const claimDue = ({ jobs, sql }: JobSqlContext, { due, limit, onePerKey, set }: ClaimParts) => {
  const locked =
    sql`FROM ${jobs} WHERE ${due} ORDER BY priority DESC, run_at ASC LIMIT (SELECT ${limit}) FOR UPDATE SKIP LOCKED`
  const picked = onePerKey
    ? sql`SELECT DISTINCT ON (p.claim_lease, CASE WHEN p.claim_lease IS NULL THEN p.id END) p.id FROM (SELECT id, claim_lease, priority, run_at ${locked}) p ORDER BY p.claim_lease, CASE WHEN p.claim_lease IS NULL THEN p.id END, p.priority DESC, p.run_at ASC`
    : sql`SELECT id ${locked}`
  return sql`UPDATE ${jobs} SET ${set} WHERE id = ANY(ARRAY(${picked})) RETURNING ${JOB_COLUMNS}`
}

/** The PostgreSQL dialect. */
export const postgres: Dialect = {
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
)`,
    tableExists: (name) =>
      sql`SELECT 1 AS present FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ${name}`,
    // ON CONFLICT DO NOTHING: a name inserted meanwhile by someone else is no error, so an
    // enclosing transaction is never aborted by a duplicate key.
    insert: (t, row) =>
      sql`INSERT INTO ${t} (lockname, lockowner, lockhost, acquiredat, expiresat) VALUES (${row.name}, ${row.owner}, ${row.host}, ${row.acquiredAt}, ${row.expiresAt}) ON CONFLICT (lockname) DO NOTHING`,
    // Insert, or take over a lease that expired strictly before now, and bump the name's token
    // counter, in one statement that never raises a duplicate-key error (so an enclosing
    // transaction stays usable). Concurrent callers on one row queue on its lock and re-check the
    // WHERE, so exactly one wins, and only the winner's CTE row reaches the counter. A caller that
    // did not win gets the holder from the statement's snapshot instead (no second round trip).
    acquire: {
      kind: "upsertWithToken",
      statement: (t, tokens, row) =>
        sql`WITH got AS (${
          insertOrTakeOver(
            t,
            sql`VALUES (${row.name}, ${row.owner}, ${row.host}, ${row.acquiredAt}, ${row.expiresAt})`,
            "lockname"
          )
        }), bumped AS (${
          bumpTokens(tokens, sql`SELECT lockname, 1 FROM got`, "token")
        }) SELECT 1 AS got, NULL AS lockowner, token FROM bumped UNION ALL SELECT 0, l.lockowner, k.token FROM ${t} l LEFT JOIN ${tokens} k ON k.lockname = l.lockname WHERE l.lockname = ${row.name} AND NOT EXISTS (SELECT 1 FROM bumped)`
    },
    createTokensTable: (tokens) =>
      sql`CREATE TABLE IF NOT EXISTS ${tokens} (
  lockname VARCHAR(100) NOT NULL PRIMARY KEY,
  token BIGINT NOT NULL
)`,
    bumpToken: (tokens, name) => [bumpTokens(tokens, sql`VALUES (${name}, 1)`, "token")]
  },
  fences: {
    createTable: (t) =>
      sql`CREATE TABLE IF NOT EXISTS ${t} (
  resource VARCHAR(255) NOT NULL PRIMARY KEY,
  token BIGINT NOT NULL
)`,
    // ON CONFLICT DO UPDATE locks the row even when GREATEST leaves it as it was; a concurrent
    // guard of the same resource waits for our commit and re-reads the row.
    record: (t, resource, token) => [
      sql`INSERT INTO ${t} (resource, token) VALUES (${resource}, ${token}) ON CONFLICT (resource) DO UPDATE SET token = GREATEST(${t}.token, EXCLUDED.token) RETURNING token`
    ]
  },
  jobs: {
    insert,
    insertMany,
    latestRead: new RawSql(""),
    claim: {
      kind: "returning",
      // One statement: the subquery locks the best due rows, skipping rows other claimers hold.
      //
      // `LIMIT (SELECT n)`, not `LIMIT n`: statistics lag a bulk enqueue (autovacuum analyzes at
      // most once a naptime, a minute by default), and a table analyzed while its queue was empty
      // estimates two pending rows. Shown LIMIT 10 of an estimated two, the planner costs the
      // whole scan and prefers a bitmap scan that reads and sorts every due row to the ready
      // index's ordered scan that stops after n. A limit it cannot read
      // is costed as a fraction of the rows, and the ordered scan wins under any estimate
      // (test/integration/claim-plan.test.ts).
      statement: claimDue,
      newToken: new RawSql("gen_random_uuid()::text"),
      // The claim above, then the leases of the claimed rows in one insertOrTakeOver (the acquire
      // statement's rule) and a bump of each taken name's
      // token counter. One row per name (DISTINCT ON; the best row of a key gets it), in name
      // order, so two claims lock lease rows in the same order; a name the statement's snapshot
      // shows held is not tried, so no claim waits on a committed holder (it does wait for a
      // transaction still taking that lease: docs/behaviour.md §8). `OFFSET 0` keeps that look an
      // index probe per row: without it the planner hashes the whole lease table, dead rows of
      // every lease released since its last vacuum included, once per claim. The casts type
      // parameters a SELECT list cannot infer; the columns are named, never `*`, so the statement
      // is prepared (./preparing.ts).
      leases: {
        kind: "inClaim",
        statement: (c, parts, { host, now }) =>
          c.sql`WITH claimed AS (${claimDue(c, parts)}),
took AS (${
            insertOrTakeOver(
              c.jobLocks,
              c.sql`SELECT DISTINCT ON (c.claim_lease) c.claim_lease, c.claim_token, CAST(${host} AS VARCHAR(255)), CAST(${now} AS BIGINT), c.stale_at FROM claimed c WHERE c.claim_lease IS NOT NULL AND c.stale_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM ${c.jobLocks} h WHERE h.lockname = c.claim_lease AND h.expiresat >= CAST(${now} AS BIGINT) OFFSET 0) ORDER BY c.claim_lease, c.priority DESC, c.run_at ASC, c.id`,
              "lockname, lockowner, expiresat"
            )
          }),
bumped AS (${bumpTokens(c.jobLockTokens, c.sql`SELECT lockname, 1 FROM took`, "lockname, token")})
SELECT ${JOB_COLUMNS}, b.token AS lease_token, t.expiresat AS lease_expires FROM claimed c LEFT JOIN took t ON t.lockowner = c.claim_token LEFT JOIN bumped b ON b.lockname = t.lockname`
      }
    },
    hostCap: {
      kind: "lockHostRow",
      lockHost: ({ sql, hosts }, host) => sql`SELECT host FROM ${hosts} WHERE host = ${host} FOR UPDATE`
    },
    wakeups: {
      kind: "notify",
      insertNotify: (c, j, channel) =>
        c.sql`WITH inserted AS (${
          insert(c, j)
        } RETURNING id, queue) SELECT id, pg_notify(${channel}, queue) FROM inserted`,
      // One notification per queue, however many rows: the scalar subquery runs once.
      insertManyNotify: (c, jobs, channel) =>
        c.sql`WITH inserted AS (${
          insertMany(c, jobs)
        }), rung AS (SELECT pg_notify(${channel}, queue) FROM inserted GROUP BY queue) SELECT id, (SELECT COUNT(*) FROM rung) AS rung FROM inserted`,
      // SELECT pg_notify: a parameterised NOTIFY is rejected, and this form is delivered only
      // when the surrounding transaction commits.
      notify: (channel, payload) => sql`SELECT pg_notify(${channel}, ${payload})`
    },
    finish: {
      kind: "oneStatement",
      // The outcome, the release and the hand-off in one round trip and one transaction. The
      // hand-off runs only if the release deleted our row; listeners are notified after it
      // (../sql/wakeupSignal.ts).
      // Passing the lease on (`f.transfer`): moved, and the name's token bumped, in the same
      // statement; if it did not move (a job waits on it asleep, FinishInput `unlessWaiting`),
      // released and handed off as usual. `released` counts either, `transferred` is the token.
      statement: ({ sql, jobs, jobLocks, jobLockTokens }, f) => {
        const moving = f.transfer === undefined ? sql`` : sql`moved AS (${f.transfer} RETURNING lockname),
bumped AS (${bumpTokens(jobLockTokens, sql`SELECT lockname, 1 FROM moved`, "token")}),
`
        const notMoved = f.transfer === undefined ? sql`` : sql` AND NOT EXISTS (SELECT 1 FROM moved)`
        const counts = f.transfer === undefined
          ? sql`(SELECT COUNT(*) FROM released) AS released`
          : sql`(SELECT COUNT(*) FROM released) + (SELECT COUNT(*) FROM moved) AS released, (SELECT token FROM bumped) AS transferred`
        return sql`WITH done AS (${f.outcome} RETURNING id),
${moving}released AS (DELETE FROM ${jobLocks} WHERE lockname = ${f.leaseName} AND lockowner = ${f.owner}${notMoved} RETURNING lockname),
woke AS (UPDATE ${jobs} SET run_at = LEAST(run_at, ${f.now}, created_at) WHERE id = (SELECT id FROM ${jobs} WHERE lease_name = ${f.leaseName} AND status = 'pending' AND id <> ${f.id} AND EXISTS (SELECT 1 FROM released)${new RawSql(
          f.handOff ? "" : " AND FALSE"
        )} ORDER BY priority DESC, created_at ASC, id ASC LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id)
SELECT (SELECT COUNT(*) FROM done) AS written, ${counts}, (SELECT COUNT(*) FROM woke) AS woke`
      },
      // Several leased completions in one statement. Every part reads the statement's snapshot,
      // where the attempts completed here are still processing: never their own waiters.
      // The attempts are bound as three arrays, so the text is one whatever the batch's size:
      // as a list of placeholders, a batch of 40 ran past preparing.ts's MAX_TEXT_LENGTH and was
      // parsed and planned on every call. `= ANY` finds the rows by primary key; the pairs then keep each id with its own token
      // (columns named: a `*` is never prepared, ./preparing.ts).
      completeLeased: ({ sql, jobLocks }, p) => {
        const ids = sql`CAST(${p.ids} AS VARCHAR[])`
        const tokens = sql`CAST(${p.tokens} AS VARCHAR[])`
        const leases = sql`CAST(${p.leases} AS VARCHAR[])`
        return sql`WITH done AS (${
          p.done(
            sql`id = ANY(${ids}) AND (id, claim_token) IN (SELECT a.id, a.token FROM unnest(${ids}, ${tokens}) AS a(id, token))`
          )
        }),
released AS (DELETE FROM ${jobLocks} WHERE lockname = ANY(${leases}) AND (lockname, lockowner) IN (SELECT a.lease, a.token FROM unnest(${leases}, ${tokens}) AS a(lease, token)) RETURNING lockname, lockowner),
woke AS (${p.handOff(sql`SELECT lockname FROM released`, sql`SELECT unnest(${ids})`)} RETURNING id)
SELECT 'done' AS kind, id AS a, claim_token AS b FROM done
UNION ALL SELECT 'released', lockname, lockowner FROM released
UNION ALL SELECT 'woke', CAST(COUNT(*) AS TEXT), NULL FROM woke`
      },
      // Leases, hand-offs and attempts in one statement. Every part reads the statement's
      // snapshot, where the jobs handed back are still processing: never their own waiters.
      handBack: ({ sql, jobLocks }, h) =>
        sql`WITH released AS (DELETE FROM ${jobLocks} WHERE lockowner IN (${h.tokens}) RETURNING lockname),
woke AS (${h.handOff(sql`SELECT lockname FROM released`)} RETURNING id),
back AS (${h.giveBack} RETURNING id)
SELECT (SELECT COUNT(*) FROM back) AS handed_back, (SELECT COUNT(*) FROM released) AS released, (SELECT COUNT(*) FROM woke) AS woke`
    },
    updateReports: "rows",
    isolation: "session",
    handOff: ({ sql, jobs }, leaseName, now, exceptId) =>
      sql`UPDATE ${jobs} SET run_at = LEAST(run_at, ${now}, created_at) WHERE id = (SELECT id FROM ${jobs} WHERE lease_name = ${leaseName} AND status = 'pending' AND id <> ${exceptId} ORDER BY priority DESC, created_at ASC, id ASC LIMIT 1 FOR UPDATE SKIP LOCKED)`,
    upsertHost: ({ sql, hosts }, host, now, maxConcurrent, codeVersion) =>
      sql`INSERT INTO ${hosts} (host, last_seen_at, started_at, running, max_concurrent, draining, code_version) VALUES (${host}, ${now}, ${now}, 0, ${maxConcurrent}, 0, ${codeVersion}) ON CONFLICT (host) DO UPDATE SET last_seen_at = EXCLUDED.last_seen_at, max_concurrent = EXCLUDED.max_concurrent, code_version = EXCLUDED.code_version`,
    ensureHost: ({ sql, hosts }, host, now) =>
      sql`INSERT INTO ${hosts} (host, last_seen_at, started_at, running, max_concurrent, draining) VALUES (${host}, ${now}, ${now}, 0, 0, 0) ON CONFLICT (host) DO NOTHING`,
    // jsonb: `- 0` drops the oldest record once the history is full; the casts type the
    // parameters, which jsonb_build_object's variadic "any" cannot infer.
    historyAppended: ({ sql }, e) =>
      sql`CASE WHEN jsonb_array_length(COALESCE(history, '[]'::jsonb)) >= ${
        literalInt(MAX_HISTORY)
      } THEN history - 0 ELSE COALESCE(history, '[]'::jsonb) END || jsonb_build_array(jsonb_build_object('attempt', attempts, 'startedAt', updated_at, 'endedAt', ${e.endedAt}::bigint, 'outcome', ${e.outcome}::text, 'error', ${e.error}::text, 'host', claimed_by))`
  },
  isTransient: (cause) => ["40P01", "40001"].includes(errorCode(cause) ?? ""),
  isDuplicateKey: (cause) => errorCode(cause) === "23505",
  // Class 08 (connection exception), 57P01–57P03 (server shutting down or not yet up), a socket
  // error, or node-postgres's own message for a connection that ended under a query.
  isDisconnect: (cause) => {
    const code = errorCode(cause) ?? ""
    return code.startsWith("08") || ["57P01", "57P02", "57P03"].includes(code) || isNetworkError(cause) ||
      /Connection terminated|connection timeout|Client has encountered a connection error/i.test(
        String((cause as Error | null)?.message ?? "")
      )
  },
  affectedRows: (raw) => Number((raw as { rowCount?: number | null }).rowCount ?? 0)
}
