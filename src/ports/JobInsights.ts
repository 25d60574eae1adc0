/**
 * The JobInsights port: the read-side queries the dashboard (src/dashboard/) needs beyond the
 * JobStore's: pages of jobs by keyset (never OFFSET, so the hundredth page costs what the first
 * does), completions and deaths per minute, and the oldest due job. Implementations:
 * src/adapters/sql/JobInsights.ts and src/adapters/memory/JobInsights.ts (the model).
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Context, type Effect, type Option } from "effect"
import type { JobStatus } from "../core/jobs.ts"
import type { JobRow } from "../core/model.ts"

/** Where a page of jobs ends: the last row's creation time and id (newest first, id descending on ties). */
export interface JobCursor {
  readonly createdAt: number
  readonly id: string
}

/** A page of jobs to read: filters, and the rows strictly after `after` in the page order. */
export interface JobPageQuery {
  readonly status?: JobStatus | undefined
  readonly queue?: string | undefined
  readonly name?: string | undefined
  readonly after?: JobCursor | undefined
  readonly limit: number
}

/** Jobs completed and jobs that died (failed or interrupted) in one minute starting at `minute` (epoch ms). */
export interface ActivityMinute {
  readonly minute: number
  readonly completed: number
  readonly failed: number
}

/** The dashboard's queries. */
export interface JobInsightsApi {
  /** Jobs newest first (`created_at DESC, id DESC`), after the cursor, at most `limit`. */
  readonly page: (query: JobPageQuery) => Effect.Effect<ReadonlyArray<JobRow>, SqlError>
  /**
   * Per minute since `since` (a whole minute, epoch ms): completions by `completed_at`, deaths
   * by `failed_at`. Minutes with neither are left out.
   */
  readonly activity: (since: number) => Effect.Effect<ReadonlyArray<ActivityMinute>, SqlError>
  /** The `run_at` of the pending job that has been due longest at `now`, if any is due. */
  readonly oldestDue: (now: number) => Effect.Effect<Option.Option<number>, SqlError>
}

/** The JobInsights service. */
export class JobInsights extends Context.Tag("leasehold/JobInsights")<JobInsights, JobInsightsApi>() {}
