/**
 * Recurring jobs without a store (docs/behaviour.md §14): a bad schedule is a JobDefinitionError
 * at definition time, and core's slots and decisions, time zones and seconds included. That one
 * job per slot results however many workers run is checked on every adapter in
 * test/conformance/schedules.ts.
 */
import { Either, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { JobDefinitionError } from "../../src/core/errors.ts"
import { decideSlot, latestSlot, nextSlot, ON_TIME_MS, parseCronSchedule } from "../../src/core/schedules.ts"
import { define } from "../../src/runtime/Job.ts"
import { Effect } from "effect"

const Payload = Schema.Struct({ region: Schema.String })
const perform = () => Effect.void

const refusal = (schedule: unknown): string => {
  try {
    define({ name: "Report", schema: Payload, schedule: schedule as never, perform })
  } catch (e) {
    expect(e).toBeInstanceOf(JobDefinitionError)
    expect(e).toMatchObject({ _tag: "JobDefinitionError", jobName: "Report" })
    return (e as JobDefinitionError).reason
  }
  throw new Error("define accepted the schedule")
}

const read = (cron: string, timeZone?: string) => Either.getOrThrow(parseCronSchedule(cron, timeZone))
const at = (iso: string) => Date.parse(iso)

describe("a job type's schedule", () => {
  it("a bad cron, time zone, catch-up or payload is a JobDefinitionError at definition", () => {
    expect(refusal({ cron: "61 * * * *", payload: { region: "eu" } })).toMatch(
      /schedule: cron "61 \* \* \* \*" is not a cron expression/
    )
    expect(refusal({ cron: "* * *", payload: { region: "eu" } })).toMatch(/Invalid number of segments/)
    expect(refusal({ cron: "", payload: { region: "eu" } })).toMatch(/cron must be a cron expression/)
    expect(refusal({ cron: "0 0 30 2 *", payload: { region: "eu" } })).toMatch(/matches no time/)
    expect(refusal({ cron: "0 3 * * *", timeZone: "Mars/Olympus", payload: { region: "eu" } })).toMatch(
      /timeZone "Mars\/Olympus" is not a time zone/
    )
    expect(refusal({ cron: "0 3 * * *", catchUp: "all", payload: { region: "eu" } })).toMatch(
      /catchUp must be "once" or "skip", got all/
    )
    // the payload defaults to {}, which this schema refuses
    expect(refusal({ cron: "0 3 * * *" })).toMatch(/the payload does not fit the schema/)
    expect(refusal({ cron: "0 3 * * *", payload: { region: 7 } })).toMatch(/the payload does not fit the schema/)
    expect(refusal(null)).toMatch(/schedule must be/)
  })

  it("a good one is resolved with its defaults: UTC, catch-up once", () => {
    const Report = define({
      name: "Report",
      schema: Payload,
      schedule: { cron: " 0 3 * * * ", payload: { region: "eu" } },
      perform
    })
    expect(Report.schedule).toMatchObject({
      expression: "0 3 * * *",
      timeZone: "UTC",
      catchUp: "once",
      payload: { region: "eu" }
    })
    expect(define({ name: "Plain", schema: Payload, perform }).schedule).toBeUndefined()
  })
})

describe("slots (core)", () => {
  it("five fields are minutes; six put seconds first", () => {
    const minutely = read("*/15 * * * *")
    expect(nextSlot(minutely, at("2026-06-01T10:07:30Z"))).toBe(at("2026-06-01T10:15:00Z"))
    const tenSeconds = read("*/10 * * * * *")
    expect(nextSlot(tenSeconds, at("2026-06-01T10:07:30Z"))).toBe(at("2026-06-01T10:07:40Z"))
  })

  it("next is strictly after; latest is at or before, to the millisecond", () => {
    const s = read("*/10 * * * * *")
    const slot = at("2026-06-01T10:00:00Z")
    expect(nextSlot(s, slot)).toBe(slot + 10_000)
    expect(nextSlot(s, slot - 1)).toBe(slot)
    expect(latestSlot(s, slot)).toBe(slot)
    expect(latestSlot(s, slot + 999)).toBe(slot)
    expect(latestSlot(s, slot - 1)).toBe(slot - 10_000)
  })

  it("a time zone moves the slots, daylight saving time included", () => {
    const paris = read("0 3 * * *", "Europe/Paris")
    // summer (UTC+2) and winter (UTC+1)
    expect(nextSlot(paris, at("2026-06-01T00:00:00Z"))).toBe(at("2026-06-01T01:00:00Z"))
    expect(nextSlot(paris, at("2026-12-01T00:00:00Z"))).toBe(at("2026-12-01T02:00:00Z"))
    expect(nextSlot(read("0 3 * * *", "+05:30"), at("2026-06-01T00:00:00Z"))).toBe(at("2026-06-01T21:30:00Z"))
  })

  it("only the latest slot is ever due; under skip only within a minute of it", () => {
    const once = read("0 * * * *")
    const skip = Either.getOrThrow(parseCronSchedule("0 * * * *", "UTC", "skip"))
    const t0 = at("2026-06-01T00:00:00Z")
    const hour = 3_600_000
    // a new schedule: nothing before it was registered
    expect(decideSlot(once, null, t0 + 1, t0 + 2)).toEqual({ _tag: "NotDue" })
    expect(decideSlot(once, null, t0, t0)).toEqual({ _tag: "Enqueue", slot: t0 })
    // three hours and a half down: one run, for the latest slot
    expect(decideSlot(once, t0, t0, t0 + 3.5 * hour)).toEqual({ _tag: "Enqueue", slot: t0 + 3 * hour })
    expect(decideSlot(once, t0 + 3 * hour, t0, t0 + 3.5 * hour)).toEqual({ _tag: "NotDue" })
    expect(decideSlot(skip, t0, t0, t0 + 3.5 * hour)).toEqual({ _tag: "Skip", slot: t0 + 3 * hour })
    expect(decideSlot(skip, t0, t0, t0 + hour + ON_TIME_MS)).toEqual({ _tag: "Enqueue", slot: t0 + hour })
    expect(decideSlot(skip, t0, t0, t0 + hour + ON_TIME_MS + 1)).toEqual({ _tag: "Skip", slot: t0 + hour })
  })
})
