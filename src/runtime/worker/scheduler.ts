/**
 * The scheduler of recurring jobs (docs/behaviour.md §14), run by every long-running worker:
 * for each job type with a `schedule`, it registers the type's row in the schedules table, and
 * at each slot moves the row's last slot by compare-and-set (src/ports/ScheduleStore.ts) with the
 * enqueue in the same transaction, so one job per slot results however many workers run. The
 * decision (enqueue, skip, wait) is core's `decideSlot` (src/core/schedules.ts).
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Clock, Data, Effect, Option } from "effect"
import type { EnqueueInputError, PayloadError } from "../../core/errors.ts"
import { decideSlot, newScheduleRow, nextSlot, sameDefinition, type ScheduleRow } from "../../core/schedules.ts"
import { JobStore } from "../../ports/JobStore.ts"
import { ScheduleStore } from "../../ports/ScheduleStore.ts"
import { type AnyJobType, enqueue, type JobSchedule, Jobs } from "../Job.ts"

/** What one pass did for one schedule. */
export type ScheduleOutcome = Data.TaggedEnum<{
  /** A job was enqueued for `slot` (epoch ms; the job's run_at). */
  Enqueued: { readonly name: string; readonly slot: number; readonly jobId: string }
  /** `slot` was missed and the policy is `"skip"`: recorded as handled, no job. */
  Skipped: { readonly name: string; readonly slot: number }
  /** Nothing new since the last slot handled (by this worker or another). */
  NotDue: { readonly name: string }
}>

/** Constructors of `ScheduleOutcome`. */
export const ScheduleOutcome = Data.taggedEnum<ScheduleOutcome>()

/** What a pass can fail with: the database, or a payload the Schema no longer accepts. */
export type ScheduleError = SqlError | PayloadError | EnqueueInputError

/** The services the scheduler needs. */
export type SchedulerServices = Jobs | JobStore | ScheduleStore

/** Longest sleep between passes, so a clock that jumped (a suspended machine) is noticed soon. */
const MAX_SLEEP_MS = 60_000

/** How often a pass that lost its compare-and-set reads the row again before it gives up until the next wake. */
const MAX_RACES = 3

interface Scheduled {
  readonly type: AnyJobType
  readonly schedule: JobSchedule
}

/** The registered job types that have a schedule. */
const scheduledTypes: Effect.Effect<ReadonlyArray<Scheduled>, never, Jobs> = Effect.map(
  Jobs,
  (jobs) =>
    jobs.names.flatMap((name) => {
      const type = Option.getOrUndefined(jobs.get(name))?.type
      return type?.schedule === undefined ? [] : [{ type, schedule: type.schedule }]
    })
)

/** The row of `s`, registered if missing and redefined if the app changed its schedule. */
const currentRow = (s: Scheduled, now: number): Effect.Effect<ScheduleRow, SqlError, ScheduleStore> =>
  Effect.gen(function*() {
    const store = yield* ScheduleStore
    const row = yield* store.register(newScheduleRow(s.type.name, s.schedule, now))
    if (sameDefinition(row, s.schedule)) return row
    const redefined: ScheduleRow = {
      ...row,
      cron: s.schedule.expression,
      timeZone: s.schedule.timeZone,
      catchUp: s.schedule.catchUp,
      nextSlot: nextSlot(s.schedule, Math.max(now - 1, row.lastSlot ?? 0)) ?? null,
      updatedAt: now
    }
    yield* store.redefine(redefined)
    return redefined
  })

/** One pass over one schedule at `now`: at most one slot handled. */
const handle = (s: Scheduled, now: number): Effect.Effect<ScheduleOutcome, ScheduleError, SchedulerServices> =>
  Effect.gen(function*() {
    const store = yield* ScheduleStore
    const name = s.type.name
    for (let race = 0; race < MAX_RACES; race++) {
      const row = yield* currentRow(s, now)
      const decision = decideSlot(s.schedule, row.lastSlot, row.createdAt, now)
      if (decision._tag === "NotDue") return ScheduleOutcome.NotDue({ name })
      const input = {
        name,
        from: row.lastSlot,
        slot: decision.slot,
        nextSlot: nextSlot(s.schedule, decision.slot) ?? null,
        now
      }
      if (decision._tag === "Skip") {
        const moved = yield* store.advance(input, Effect.void)
        if (Option.isSome(moved)) return ScheduleOutcome.Skipped({ name, slot: decision.slot })
        continue
      }
      // run_at is the slot: the job row says which slot it ran for (a missed one is due at once).
      const moved = yield* store.advance(input, enqueue(s.type, s.schedule.payload, { runAt: decision.slot }))
      if (Option.isSome(moved)) {
        // Committed: wake this process's idle workers (an enqueue in a transaction cannot).
        ;(yield* JobStore).wakeups.ring()
        return ScheduleOutcome.Enqueued({ name, slot: decision.slot, jobId: moved.value.id })
      }
      // Another worker moved the row first: read it again (it most likely took this very slot).
    }
    return ScheduleOutcome.NotDue({ name })
  })

/**
 * One pass over every scheduled job type at the Clock's now: registers each one's row, and
 * enqueues (or, under `"skip"`, drops) the latest slot not yet handled. Safe to run from any
 * number of processes at once: one job per slot results. The long-running worker runs it at each
 * slot; call it yourself where no worker runs long (next to `Worker.tick`).
 */
export const enqueueDue: Effect.Effect<ReadonlyArray<ScheduleOutcome>, ScheduleError, SchedulerServices> = Effect
  .gen(function*() {
    const scheduled = yield* scheduledTypes
    const now = yield* Clock.currentTimeMillis
    return yield* Effect.forEach(scheduled, (s) => handle(s, now))
  })

const iso = (ms: number) => new Date(ms).toISOString()

/**
 * The long-running worker's scheduler: a pass per schedule at each of its slots (and at start),
 * sleeping in between. A failed pass is logged and tried again after `retryMs`; it never stops
 * the loop. Returns at once when no registered job type has a schedule.
 */
export const runScheduler = (retryMs: number): Effect.Effect<void, never, SchedulerServices> =>
  Effect.gen(function*() {
    const scheduled = yield* scheduledTypes
    if (scheduled.length === 0) return
    const wakeAt = new Map<string, number>(scheduled.map((s) => [s.type.name, 0]))
    for (;;) {
      const now = yield* Clock.currentTimeMillis
      for (const s of scheduled) {
        const name = s.type.name
        if (wakeAt.get(name)! > now) continue
        const outcome = yield* Effect.either(handle(s, now))
        if (outcome._tag === "Left") {
          yield* Effect.logWarning(`schedule ${name}: ${outcome.left.message}; trying again in ${retryMs} ms`)
          wakeAt.set(name, now + retryMs)
          continue
        }
        const done = outcome.right
        if (done._tag === "Enqueued") {
          yield* Effect.logInfo(`schedule ${name}: enqueued job ${done.jobId} for ${iso(done.slot)}`)
        } else if (done._tag === "Skipped") {
          yield* Effect.logInfo(`schedule ${name}: skipped the missed slot ${iso(done.slot)} (catchUp "skip")`)
        }
        wakeAt.set(name, nextSlot(s.schedule, now) ?? now + MAX_SLEEP_MS)
      }
      const after = yield* Clock.currentTimeMillis
      const next = Math.min(...wakeAt.values())
      yield* Effect.sleep(Math.min(MAX_SLEEP_MS, Math.max(0, next - after)))
    }
  })
