/**
 * The SQL JobInsights (src/ports/JobInsights.ts): the dashboard's queries, the same text on
 * PostgreSQL, MySQL/MariaDB and SQLite. The jobs page walks migration 5's `(created_at, id)`
 * index backwards from the cursor (src/adapters/sql/schema.ts); the activity chart reads the
 * completed rows of the last hour through the completed-at index.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option } from "effect"
import { MINUTE_MS } from "../../core/browse.ts"
import { decodeEpochMs } from "../../core/lease.ts"
import { tableNames } from "../../core/tables.ts"
import { type ActivityMinute, JobInsights, type JobInsightsApi, type JobPageQuery } from "../../ports/JobInsights.ts"
import { JOB_COLUMNS } from "./columns.ts"
import { decodeJobRow, int } from "./decode.ts"
import { hintingMissingSchema } from "../schemaErrors.ts"
import { dialectOf } from "./dialects.ts"
import { checkIdentifier, literalInt, RawSql, type Statement, sqlFor, type Syntax } from "./statement.ts"

/** The dashboard's statements for one dialect's syntax and one jobs table. */
export const insightStatements = (syntax: Syntax, jobsTable: string) => {
  const sql = sqlFor(syntax)
  const jobs = new RawSql(syntax.quote(checkIdentifier(jobsTable)))
  const empty = sql``
  const minute = literalInt(MINUTE_MS)
  return {
    // `created_at <= c` bounds the index range; the OR picks the rows strictly after the cursor.
    page: (q: JobPageQuery): Statement =>
      sql`SELECT ${JOB_COLUMNS} FROM ${jobs} WHERE 1 = 1${
        q.status === undefined ? empty : sql` AND status = ${q.status}`
      }${q.queue === undefined ? empty : sql` AND queue = ${q.queue}`}${
        q.name === undefined ? empty : sql` AND name = ${q.name}`
      }${
        q.after === undefined
          ? empty
          : sql` AND created_at <= ${q.after.createdAt} AND (created_at < ${q.after.createdAt} OR id < ${q.after.id})`
      } ORDER BY created_at DESC, id DESC LIMIT ${literalInt(q.limit)}`,
    completedPerMinute: (since: number): Statement =>
      sql`SELECT completed_at - (completed_at % ${minute}) AS minute, COUNT(*) AS n FROM ${jobs} WHERE status = 'completed' AND completed_at >= ${since} GROUP BY completed_at - (completed_at % ${minute})`,
    failedPerMinute: (since: number): Statement =>
      sql`SELECT failed_at - (failed_at % ${minute}) AS minute, COUNT(*) AS n FROM ${jobs} WHERE status IN ('failed', 'interrupted') AND failed_at >= ${since} GROUP BY failed_at - (failed_at % ${minute})`,
    oldestDue: (now: number): Statement =>
      sql`SELECT MIN(run_at) AS run_at FROM ${jobs} WHERE status = 'pending' AND run_at <= ${now}`
  }
}

/** Builds the SQL JobInsights over the current `SqlClient` for one table prefix. */
export const make = (
  options: { readonly prefix?: string | undefined } = {}
): Effect.Effect<JobInsightsApi, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const s = insightStatements(dialectOf(sql).syntax, tableNames(options.prefix).jobs)
    const rows = (st: Statement) =>
      sql.unsafe<Record<string, unknown>>(st.sql, st.params as Array<unknown>).withoutTransform
    const perMinute = (st: Statement) =>
      Effect.map(rows(st), (r) => new Map(r.map((x) => [decodeEpochMs(x.minute), int(x.n)] as const)))
    return hintingMissingSchema(JobInsights.of({
      page: (q) => Effect.map(rows(s.page(q)), (r) => r.map(decodeJobRow)),
      activity: (since) =>
        Effect.zipWith(perMinute(s.completedPerMinute(since)), perMinute(s.failedPerMinute(since)), (done, dead) =>
          [...new Set([...done.keys(), ...dead.keys()])]
            .sort((a, b) =>
              a - b
            )
            .map((minute): ActivityMinute => ({
              minute,
              completed: done.get(minute) ?? 0,
              failed: dead.get(minute) ?? 0
            }))),
      oldestDue: (now) =>
        Effect.map(rows(s.oldestDue(now)), (r) => {
          const v = r[0]?.run_at
          return v === null || v === undefined ? Option.none() : Option.some(decodeEpochMs(v))
        })
    }))
  })

/** A layer providing the SQL `JobInsights` for one prefix over the current `SqlClient`. */
export const layer = (
  options: { readonly prefix?: string | undefined } = {}
): Layer.Layer<JobInsights, never, SqlClient.SqlClient> => Layer.effect(JobInsights, make(options))
