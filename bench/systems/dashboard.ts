/**
 * Scenario 8: the dashboard's server time (src/dashboard/app.ts `handle`, the work behind one
 * HTTP answer, without the socket) on a jobs table of `n` rows: the first jobs page, a page 90%
 * of the way down (by its keyset cursor), the page of failed jobs, and the overview. The rows are
 * inserted by one statement (10% failed, 30% pending, the rest completed, created 100 ms apart
 * up to now), then the tables are analysed.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, ManagedRuntime } from "effect"
import { performance } from "node:perf_hooks"
import { tableNames } from "../../src/core/tables.ts"
import { handle } from "../../src/dashboard/app.ts"
import { servicesLayer } from "../../src/dashboard/node.ts"
import * as Migrator from "../../src/runtime/migrate.ts"
import { percentile } from "../lib/stats.ts"
import { backendOf, sqlLayer } from "../lib/sql.ts"

const STEP_MS = 100

/** One INSERT … SELECT of `n` rows, row g created at `base + g * STEP_MS`. */
const fillStatement = (url: string, jobs: string, n: number, base: number): string => {
  const mysql = backendOf(url) !== "pg" && backendOf(url) !== "sqlite"
  const g = mysql ? "(a.n * 10000 + b.n * 1000 + c.n * 100 + d.n * 10 + e.n + 1)" : "g"
  const id = mysql
    ? `CONCAT('job-', LPAD(${g}, 7, '0'))`
    : backendOf(url) === "pg"
    ? `'job-' || lpad(${g}::text, 7, '0')`
    : `'job-' || substr('0000000' || ${g}, -7, 7)`
  const created = `${base} + ${g} * ${STEP_MS}`
  const status = `CASE WHEN ${g} % 10 = 0 THEN 'failed' WHEN ${g} % 3 = 0 THEN 'pending' ELSE 'completed' END`
  const q = mysql ? "`" : "\""
  const columns =
    "id, name, queue, payload, priority, status, attempts, max_retries, claim_timeout, grace_ms, unique_key, last_error, run_at, completed_at, failed_at, created_at, updated_at"
  const values =
    `${id}, CASE WHEN ${g} % 2 = 0 THEN 'SendReceipt' ELSE 'SyncAccount' END, CASE WHEN ${g} % 4 = 0 THEN 'emails' ELSE 'default' END,
    '{"accountId":42,"email":"someone@example.com"}', 0, ${status}, 1, 0, 60, 120000, ${id},
    CASE WHEN ${g} % 10 = 0 THEN 'HttpError: 503 Service Unavailable' ELSE NULL END, ${created},
    CASE WHEN ${g} % 10 <> 0 AND ${g} % 3 <> 0 THEN ${created} + 800 ELSE NULL END,
    CASE WHEN ${g} % 10 = 0 THEN ${created} + 800 ELSE NULL END, ${created}, ${created} + 800`
  const insert = `INSERT INTO ${q}${jobs}${q} (${columns}) SELECT ${values}`
  switch (backendOf(url)) {
    case "pg":
      return `${insert} FROM generate_series(1, ${n}) AS g`
    case "sqlite":
      return `WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < ${n}) ${insert} FROM s`
    default: {
      // MariaDB stops a recursive query after 1,000 rounds: numbers from digits instead.
      const digits = "(SELECT 0 n UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 " +
        "UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
      if (n > 100_000) throw new Error("the MariaDB fill makes at most 100,000 rows")
      return `${insert} FROM ${digits} a, ${digits} b, ${digits} c, ${digits} d, ${digits} e WHERE ${g} <= ${n}`
    }
  }
}

/** Server time in ms (median and p95 over `requests` answers) of each page. */
export const jobsPage = async (url: string, n: number, requests: number): Promise<Record<string, number>> => {
  const client = sqlLayer(url, 5)
  const runtime = ManagedRuntime.make(Layer.merge(Layer.provide(servicesLayer(), client), client))
  try {
    const jobs = tableNames().jobs
    const base = Date.now() - n * STEP_MS
    await runtime.runPromise(Effect.gen(function*() {
      yield* (yield* Migrator.make()).run
      const sql = yield* SqlClient.SqlClient
      yield* sql.unsafe(fillStatement(url, jobs, n, base))
      yield* sql.onDialectOrElse({
        pg: () => sql.unsafe(`VACUUM ANALYZE "${jobs}"`),
        mysql: () => sql.unsafe(`ANALYZE TABLE \`${jobs}\``),
        orElse: () => sql.unsafe("ANALYZE")
      })
    }) as Effect.Effect<void, unknown, never>)
    const app = handle({ base: "" })
    // The cursor of the row 90% of the way down the newest-first order.
    const deep = Math.max(1, Math.round(n * 0.1))
    const cursor = `${base + deep * STEP_MS}.job-${String(deep).padStart(7, "0")}`
    const pages: Record<string, string> = {
      first: "/jobs",
      deep: `/jobs?after=${encodeURIComponent(cursor)}`,
      failed: "/jobs?status=failed",
      overview: "/"
    }
    const metrics: Record<string, number> = { jobs: n }
    for (const [name, path] of Object.entries(pages)) {
      const request = { method: "GET", url: path, header: () => undefined }
      const first = await runtime.runPromise(app(request))
      if (first.status !== 200 || (name !== "overview" && !first.body.includes("job-"))) {
        throw new Error(`${path}: ${first.status} ${first.body.slice(0, 200)}`)
      }
      const times: Array<number> = []
      for (let i = 0; i < requests; i++) {
        const start = performance.now()
        await runtime.runPromise(app(request))
        times.push(performance.now() - start)
      }
      metrics[`${name}Ms`] = percentile(times, 50)
      metrics[`${name}P95Ms`] = percentile(times, 95)
    }
    return metrics
  } finally {
    await runtime.dispose()
  }
}
