/**
 * Recurring jobs (docs/behaviour.md §14), as the package exports them (`import { Schedules }
 * from "leasehold"`). A job type gets a schedule with `Job.define({ …, schedule: { cron } })`;
 * every long-running worker then enqueues it at each slot, one job per slot however many
 * workers run. This module reads the schedules and runs a pass by hand.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"
import type { ScheduleRow } from "../core/schedules.ts"
import { ScheduleStore } from "../ports/ScheduleStore.ts"

export { CATCH_UPS, type CatchUp, ON_TIME_MS, type ScheduleOptions, type ScheduleRow } from "../core/schedules.ts"
export { type AdvanceInput, ScheduleStore, type ScheduleStoreApi } from "../ports/ScheduleStore.ts"
export { enqueueDue, type ScheduleError, ScheduleOutcome, type SchedulerServices } from "./worker/scheduler.ts"

/**
 * Every schedule a worker has registered, by name: its cron, time zone, catch-up policy, the
 * last slot handled and the next slot (epoch ms; a next slot in the past means no worker has
 * run since it came). The `leasehold schedules` command prints this.
 */
export const list: Effect.Effect<ReadonlyArray<ScheduleRow>, SqlError, ScheduleStore> = Effect.flatMap(
  ScheduleStore,
  (store) => store.list
)
