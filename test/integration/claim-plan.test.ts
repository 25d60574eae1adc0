/**
 * The claim's plan on each SQL database (issue 13, src/adapters/sql/schema.ts migration 3): the
 * batch claim reads the pending rows in claim order through the `ready` index and stops at its
 * limit, even when the statistics were taken while the queue was empty (the state a bulk enqueue
 * leaves for up to a minute); and a batch completion finds its rows by primary key, not through
 * an index on status that keeps an entry for every job handled since the last vacuum.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { mysql } from "../../src/adapters/mysql/dialect.ts"
import { postgres } from "../../src/adapters/postgres/dialect.ts"
import type { Dialect } from "../../src/adapters/sql/dialect.ts"
import { jobStatements } from "../../src/adapters/sql/jobStatements.ts"
import { indexName } from "../../src/adapters/sql/schema.ts"
import { sqlite } from "../../src/adapters/sqlite/dialect.ts"
import { tableNames } from "../../src/core/tables.ts"
import { type AdapterName, layerFor, TestDatabase } from "../support/databases.ts"

const NOW = 1_791_039_632_175
// Enough rows that, on PostgreSQL, statistics from an empty table make a claim read them all.
// With such statistics PostgreSQL estimates the rows from the table's pages and the declared
// widths of its columns, and the due rows from default selectivities: a wider row (migration 9's
// `trace_context`) means fewer rows estimated per page. At 20,000 rows that estimate fell from 2
// to 1, and with one row expected, a visible LIMIT no longer leads to a sort; 50,000 rows give
// an estimate of 3.
const ROWS = 50_000

const dialects: Record<Exclude<AdapterName, "memory" | "galera">, Dialect> = { postgres, mysql, sqlite }

/** `ROWS` pending rows, due, inserted by the database itself (one statement). */
const fill = (adapter: Exclude<AdapterName, "memory" | "galera">, jobs: string) => {
  const columns =
    "id, name, queue, payload, priority, status, attempts, max_retries, claim_timeout, grace_ms, unique_key, run_at, created_at, updated_at"
  const values = (n: string) =>
    `'job-' || ${n}, 'noop', 'default', '{}', 0, 'pending', 0, 3, 30, 90000, 'key-' || ${n}, ${NOW} - ${ROWS} + ${n}, ${NOW}, ${NOW}`
  switch (adapter) {
    case "postgres":
      return `INSERT INTO ${jobs} (${columns}) SELECT ${values("g")} FROM generate_series(1, ${ROWS}) g`
    case "sqlite":
      return `WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < ${ROWS}) INSERT INTO ${jobs} (${columns}) SELECT ${
        values("g")
      } FROM s`
    case "mysql": {
      // MariaDB stops a recursive query after 1,000 rounds: numbers from digits instead.
      const digits = "(SELECT 0 n UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 " +
        "UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
      const g = "(a.n * 10000 + b.n * 1000 + c.n * 100 + d.n * 10 + e.n + 1)"
      return `INSERT INTO ${jobs} (${columns}) SELECT ${
        values(g).replaceAll(`'job-' || ${g}`, `CONCAT('job-', ${g})`).replaceAll(
          `'key-' || ${g}`,
          `CONCAT('key-', ${g})`
        )
      } FROM ${digits} a, ${digits} b, ${digits} c, ${digits} d, ${digits} e WHERE ${g} <= ${ROWS}`
    }
  }
}

/** The plan line under the first line naming `node`. */
const below = (plan: string, node: string): string => {
  const lines = plan.split("\n")
  return lines[lines.findIndex((l) => l.includes(node)) + 1] ?? ""
}

const input = { queues: undefined, host: "h", now: NOW, claimToken: "t", timeoutCap: undefined, hostCap: undefined }

for (const adapter of ["postgres", "sqlite", "mysql"] as const) {
  layer(layerFor(adapter, "plan"), { timeout: 120_000 })(`the claim's plan on ${adapter}`, (it) => {
    it.effect("the batch claim walks the ready rows in claim order and stops (on PostgreSQL whatever the statistics say); on PostgreSQL and SQLite a batch completion goes by primary key", () =>
      Effect.gen(function*() {
        const db = yield* TestDatabase
        const prefix = `${db.table("p")}_`
        yield* db.migrate(prefix)
        const tables = tableNames(prefix)
        const jobs = db.quote(tables.jobs)
        const dialect = dialects[adapter]
        const s = jobStatements(dialect, tables)
        const explain = (st: { readonly sql: string; readonly params: ReadonlyArray<unknown> }) =>
          Effect.map(
            db.query(`${adapter === "sqlite" ? "EXPLAIN QUERY PLAN" : "EXPLAIN"} ${st.sql}`, st.params),
            (rows) => rows.map((r) => Object.values(r).map(String).join(" ")).join("\n")
          )
        // Statistics from an empty queue, then a bulk enqueue the statistics have not seen.
        yield* db.query(`ANALYZE ${adapter === "mysql" ? "TABLE " : ""}${jobs}`)
        yield* db.query(fill(adapter, jobs))

        if (dialect.jobs.claim.kind === "returning") {
          const strategy = dialect.jobs.claim
          const claim = strategy.statement(s.context, s.claimParts(input, 20, strategy.newToken))
          const plan = yield* explain(claim)
          const ready = indexName(tables.jobs, "ready")
          if (adapter === "postgres") {
            const pkey = `${tables.jobs}_pkey`
            // What a plan reads, and how: every scan node with its index or table.
            const scans = (p: string) =>
              [...p.matchAll(/(Index Scan using|Index Only Scan using|Bitmap Index Scan on|Seq Scan on) (\S+)/g)].map((
                m
              ) => `${m[1]} ${m[2]}`)
            // The rows are locked as the ready index yields them, in order (no sort before LIMIT),
            // and the UPDATE finds the picked ones by primary key: nothing else is read.
            const pickedByKey = (p: string, also: ReadonlyArray<string> = []) => {
              expect(below(p, "LockRows")).toContain(`Index Scan using ${ready} `)
              const other = scans(p).filter((x) =>
                x !== `Index Scan using ${ready}` && x !== `Index Scan using ${pkey}` &&
                x !== `Bitmap Index Scan on ${pkey}` && !also.includes(x)
              )
              expect(other).toEqual([])
              expect(scans(p).some((x) => x.endsWith(pkey))).toBe(true)
            }
            const leasingClaim = strategy.leases.kind === "inClaim"
              ? strategy.leases.statement(s.context, s.claimParts(input, 20, strategy.newToken), {
                host: "h",
                now: NOW
              })
              : undefined
            const lockTable = [
              `Index Scan using ${tables.jobLocks}_pkey`,
              `Index Only Scan using ${tables.jobLocks}_pkey`
            ]
            pickedByKey(plan)
            // Why the limit is hidden in a subquery: shown the limit, on these statistics,
            // PostgreSQL reads and sorts every due row.
            const shown = yield* explain({
              sql: claim.sql.replace(/LIMIT \(SELECT (\d+)\)/, "LIMIT $1"),
              params: claim.params
            })
            expect(below(shown, "LockRows")).toContain("Sort")
            expect(shown).toContain("Bitmap Heap Scan")
            // The claim that also takes the claimed jobs' leases picks its rows the same way, and
            // looks at each lease by primary key (never a scan of the lease table and its dead rows).
            if (leasingClaim !== undefined) {
              const leasing = yield* explain(leasingClaim)
              pickedByKey(leasing, lockTable)
              expect(leasing).not.toMatch(/Hash Anti/)
              expect(leasing).toContain(`Index Scan using ${tables.jobLocks}_pkey`)
            }
            // Statistics that show the queue (autovacuum analyzed it): the same. With `id IN (…)`,
            // the hidden limit costed as a tenth of the due rows made the UPDATE a hash join over
            // a scan of the whole table.
            yield* db.query(`ANALYZE ${jobs}`)
            pickedByKey(yield* explain(claim))
            if (leasingClaim !== undefined) pickedByKey(yield* explain(leasingClaim), lockTable)
          } else {
            // SQLite, on statistics from the empty table and then on statistics that show the queue.
            expect(plan).toContain(`USING INDEX ${ready}`)
            expect(plan).not.toMatch(/TEMP B-TREE/)
            yield* db.query(`ANALYZE ${jobs}`)
            const analyzed = yield* explain(claim)
            expect(analyzed).toContain(`USING INDEX ${ready}`)
            expect(analyzed).not.toMatch(/TEMP B-TREE|SCAN \S+_jobs(?! USING)/)
          }
        } else {
          // MySQL/MariaDB lock the due rows through the claim index they force, already in order.
          const plan = yield* explain(
            dialect.jobs.claim.pickDue(s.context, s.due(input), s.claimParts(input, 20).limit)
          )
          expect(plan).toContain(`${tables.jobs}_claim`)
          expect(plan).not.toMatch(/filesort/i)
          // The same on statistics that show the queue.
          yield* db.query(`ANALYZE TABLE ${jobs}`)
          const analyzed = yield* explain(
            dialect.jobs.claim.pickDue(s.context, s.due(input), s.claimParts(input, 20).limit)
          )
          expect(analyzed).toContain(`${tables.jobs}_claim`)
          expect(analyzed).not.toMatch(/filesort/i)
          // The claim in one round trip (one server) locks the same way, one per key or not, and
          // reads the claimed rows back through the host's index.
          const packed = dialect.jobs.claim.packed!
          for (const perKey of [undefined, { skip: [] }]) {
            const tokens = ["t", "u", "v"]
            const claimInput = { ...input, perKey }
            const body = packed.statement(
              s.context,
              s.claimParts(claimInput, 20, packed.token(s.context, tokens)),
              "h",
              tokens
            )
            const [update, readBack] = body.sql.split("; SELECT ")
            const n = update!.split("?").length - 1
            const updatePlan = yield* explain({ sql: update!, params: body.params.slice(0, n) })
            expect(updatePlan).toContain(`${tables.jobs}_claim`)
            expect(updatePlan).not.toMatch(/filesort/i)
            const readPlan = yield* explain({ sql: `SELECT ${readBack!}`, params: body.params.slice(n) })
            expect(readPlan).toContain(`${tables.jobs}_claimed_by_status`)
          }
        }

        const ids = Array.from({ length: 10 }, (_, i) => ({ id: `job-${i * 7 + 1}`, token: `tok-${i}` }))
        // MySQL/MariaDB may read the few processing rows through an index on status instead:
        // InnoDB purges the entries of old row versions within moments, so that range stays small.
        if (adapter !== "mysql") {
          const completion = yield* explain(s.completeBatch(ids, NOW))
          expect(completion).toMatch(
            adapter === "sqlite" ? /sqlite_autoindex_\w+_jobs_1 \(id=\?\)/ : /Index Cond: \(\(id\)::text/
          )
          expect(completion).not.toMatch(/status_completed|_claim|claimed_by_status|SCAN/)
        }
      }))
  })
}
