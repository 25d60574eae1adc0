/**
 * Recurring jobs (docs/behaviour.md §14): a cron expression read by Effect's `Cron`, its slots
 * as epoch ms, and the one decision a scheduler makes at `now` — enqueue the latest slot, skip
 * it, or wait. Pure: the clock, the schedules table and the enqueue are the runtime's.
 */
import { Cron, Either } from "effect"

/**
 * What a scheduler does with a slot it sees late (after downtime): `"once"` enqueues the latest
 * missed slot once (earlier missed slots are dropped); `"skip"` drops it and waits for the next.
 */
export type CatchUp = "once" | "skip"

/** The catch-up policies. */
export const CATCH_UPS: ReadonlyArray<CatchUp> = ["once", "skip"]

/** The time zone of a schedule that names none: every worker must read the slots alike. */
export const DEFAULT_TIME_ZONE = "UTC"

/**
 * How late a slot may be seen and still count as on time under `catchUp: "skip"`: a worker
 * that was busy, or a database that answered slowly, must not lose a slot.
 */
export const ON_TIME_MS = 60_000

/** Longest cron expression and time zone text the schedules table holds. */
export const MAX_CRON_LENGTH = 255
/** Longest time zone name the schedules table holds. */
export const MAX_TIME_ZONE_LENGTH = 64

/** A job type's schedule as the app writes it (`Job.define({ …, schedule })`). */
export interface ScheduleOptions<A> {
  /**
   * A cron expression: 5 fields (minute hour day month weekday) or 6 with seconds first
   * (`"*\/10 * * * * *"`), as Effect's `Cron.parse` reads them.
   */
  readonly cron: string
  /** An IANA time zone (`"Europe/Paris"`) or an offset (`"+02:00"`); default `"UTC"`. */
  readonly timeZone?: string | undefined
  /** After downtime: `"once"` (default) enqueues the latest missed slot once; `"skip"` drops it. */
  readonly catchUp?: CatchUp | undefined
  /** The payload of every scheduled job (default `{}`), checked with the type's Schema at definition. */
  readonly payload?: A | undefined
}

/** A cron schedule once read: the parsed `Cron` with the text it came from. */
export interface CronSchedule {
  /** The expression as written, trimmed. */
  readonly expression: string
  readonly timeZone: string
  readonly catchUp: CatchUp
  readonly cron: Cron.Cron
}

/** Reads a cron expression, time zone and catch-up policy, or says why they cannot be used. */
export const parseCronSchedule = (
  expression: unknown,
  timeZone: unknown = DEFAULT_TIME_ZONE,
  catchUp: unknown = "once"
): Either.Either<CronSchedule, string> => {
  if (typeof expression !== "string" || expression.trim() === "") {
    return Either.left("cron must be a cron expression such as \"0 3 * * *\"")
  }
  const text = expression.trim()
  if (text.length > MAX_CRON_LENGTH) return Either.left(`cron is ${text.length} characters; at most ${MAX_CRON_LENGTH}`)
  if (typeof timeZone !== "string" || timeZone === "" || timeZone.length > MAX_TIME_ZONE_LENGTH) {
    return Either.left(`timeZone must be a time zone name of 1 to ${MAX_TIME_ZONE_LENGTH} characters`)
  }
  if (!CATCH_UPS.includes(catchUp as CatchUp)) {
    return Either.left(`catchUp must be "once" or "skip", got ${String(catchUp)}`)
  }
  const parsed = Cron.parse(text, timeZone)
  if (Either.isLeft(parsed)) {
    const what = parsed.left.message === "Invalid time zone in cron expression"
      ? `timeZone ${JSON.stringify(timeZone)} is not a time zone`
      : `cron ${JSON.stringify(text)} is not a cron expression (${parsed.left.message})`
    return Either.left(what)
  }
  const schedule: CronSchedule = { expression: text, timeZone, catchUp: catchUp as CatchUp, cron: parsed.right }
  // "0 0 30 2 *" parses but never comes: Cron gives up looking, and so does this.
  if (nextSlot(schedule, 0) === undefined) return Either.left(`cron ${JSON.stringify(text)} matches no time`)
  return Either.right(schedule)
}

/** The first slot strictly after `after` (epoch ms), or undefined when Cron finds none. */
export const nextSlot = (schedule: CronSchedule, after: number): number | undefined => {
  try {
    return Cron.next(schedule.cron, new Date(after)).getTime()
  } catch {
    return undefined
  }
}

/** The latest slot at or before `now` (epoch ms), or undefined when Cron finds none. */
export const latestSlot = (schedule: CronSchedule, now: number): number | undefined => {
  try {
    // Cron.prev looks strictly before its start, one whole second down: start just past now's second.
    return Cron.prev(schedule.cron, new Date(Math.floor(now / 1000) * 1000 + 1000)).getTime()
  } catch {
    return undefined
  }
}

/** What a scheduler does at `now` for one schedule. */
export type SlotDecision =
  /** Nothing new since the last slot handled. */
  | { readonly _tag: "NotDue" }
  /** Enqueue a job for `slot` (and record it as the last slot). */
  | { readonly _tag: "Enqueue"; readonly slot: number }
  /** Record `slot` as handled without a job: it was missed and the policy is `"skip"`. */
  | { readonly _tag: "Skip"; readonly slot: number }

/**
 * The decision at `now` for a schedule whose last handled slot is `lastSlot` (null: none yet,
 * then only slots at or after `since`, when the schedule was first registered, count). Only the
 * latest slot is ever considered, so a long downtime costs at most one run.
 */
export const decideSlot = (
  schedule: CronSchedule,
  lastSlot: number | null,
  since: number,
  now: number
): SlotDecision => {
  const latest = latestSlot(schedule, now)
  if (latest === undefined || (lastSlot === null ? latest < since : latest <= lastSlot)) return { _tag: "NotDue" }
  if (schedule.catchUp === "skip" && now - latest > ON_TIME_MS) return { _tag: "Skip", slot: latest }
  return { _tag: "Enqueue", slot: latest }
}

/** A row of the schedules table: one per scheduled job type. */
export interface ScheduleRow {
  /** The job type's name. */
  readonly name: string
  readonly cron: string
  readonly timeZone: string
  readonly catchUp: CatchUp
  /** The last slot handled (enqueued, or skipped by `"skip"`), epoch ms; null before the first. */
  readonly lastSlot: number | null
  /** The slot a worker handles next, epoch ms (in the past while no worker runs). */
  readonly nextSlot: number | null
  readonly createdAt: number
  readonly updatedAt: number
}

/** The row a scheduler registers for `name` at `now` (no slot handled yet). */
export const newScheduleRow = (name: string, schedule: CronSchedule, now: number): ScheduleRow => ({
  name,
  cron: schedule.expression,
  timeZone: schedule.timeZone,
  catchUp: schedule.catchUp,
  lastSlot: null,
  nextSlot: nextSlot(schedule, now - 1) ?? null,
  createdAt: now,
  updatedAt: now
})

/** Whether a stored row still describes `schedule` (else a worker rewrites its definition). */
export const sameDefinition = (row: ScheduleRow, schedule: CronSchedule): boolean =>
  row.cron === schedule.expression && row.timeZone === schedule.timeZone && row.catchUp === schedule.catchUp
