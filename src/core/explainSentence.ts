/**
 * The one sentence that says why a job is where it is (docs/why-a-job-waits.md), from the reason
 * ./explain.ts decided: what every surface (the APIs, `leasehold jobs why`, the dashboard's job
 * page) prints, so they say the same words. Times as ISO 8601 with how far from now.
 */
import { Duration } from "effect"
import type { ExplainReason } from "./explainReason.ts"
import { GONE_AFTER_MS } from "./hosts.ts"

/** A span of time for people: `850ms`, `42s`, `1h 1m 1s`. */
const span = (ms: number): string => ms < 1000 ? `${ms}ms` : Duration.format(Duration.seconds(Math.round(ms / 1000)))

/** A time as ISO 8601 and relative to `now`: `2026-10-03T15:01:32.175Z (in 1m)`. */
const time = (at: number, now: number): string =>
  `${new Date(at).toISOString()} (${at > now ? `in ${span(at - now)}` : at < now ? `${span(now - at)} ago` : "now"})`

/** The first line of an error, cut to a length a sentence can carry. */
const firstLine = (error: string): string => {
  const line = error.split("\n")[0]!.trim()
  return line.length > 200 ? `${line.slice(0, 199)}…` : line
}

/** `: ` and the error's first line, or nothing for no error. */
const withError = (error: string | null): string => error === null || error.trim() === "" ? "" : `: ${firstLine(error)}`

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? "" : "s"}`

/** How a lease is named in a sentence: a key by its key, anything else by its lease name. */
const leaseLabel = (name: string): string => name.startsWith("key:") ? `key ${name.slice(4)}` : name

/** Why a slot count is unknown: the type is not registered here, or declares no such limit. */
const unknownLimit = (type: string, registered: boolean, option: string): string =>
  registered
    ? `job type ${type} declares no ${option} here, so only its first slot was read`
    : `job type ${type} is not registered here, so its ${option} is unknown`

const slotOf = (slot: number, limit: number | null, held: number): string =>
  limit === null ? `slot ${slot}` : `slot ${slot} of ${limit}${held > 1 ? `, ${held} held` : ""}`

/** The sentence for a job of type `type` waiting on a busy lease. */
const busySentence = (
  r: Extract<ExplainReason, { _tag: "LeaseBusy" }>,
  type: string,
  registered: boolean,
  now: number
) => {
  const what = r.lease === "key"
    ? `waiting on a lease: ${leaseLabel(r.leaseName)}`
    : `waiting for its type's cap: ${r.leaseName}`
  const option = r.lease === "key" ? "concurrencyLimit" : "typeConcurrencyLimit"
  const unknown = r.limit === null ? ` (${unknownLimit(type, registered, option)})` : ""
  const again = `it looks again at ${time(r.runAt, now)}`
  const h = r.holder
  if (h === null) return `${what} is free now${unknown}; ${again}`
  const on = h.host === null ? "" : ` on host ${h.host}`
  const holder = `held by owner ${h.owner}${on} until ${time(h.expiresAt, now)} (${slotOf(h.slot, r.limit, r.held)})`
  return `${what} ${holder}${unknown}; ${again}, or sooner when it is handed the lease`
}

/** The sentence for a job of type `type` deferred by its rate limit. */
const rateSentence = (
  r: Extract<ExplainReason, { _tag: "RateLimited" }>,
  type: string,
  registered: boolean,
  now: number
) => {
  const due = `it is due at ${time(r.runAt, now)}`
  if (r.limit === null || r.periodMs === null) {
    const frees = r.nextFreeAt === null ? "" : `; slot 1 frees at ${time(r.nextFreeAt, now)}`
    return `rate limited on ${r.key} (${unknownLimit(type, registered, "rate limit")})${frees}; ${due}`
  }
  const per = `${plural(r.limit, "start")} per ${span(r.periodMs)}`
  if (r.used < r.limit || r.nextFreeAt === null) return `rate limited on ${r.key}: ${r.used} of ${per} used; ${due}`
  return `rate limited: ${per} used on ${r.key}; next slot frees at ${time(r.nextFreeAt, now)}` +
    (r.nextFreeAt === r.runAt ? "" : `, and ${due}`)
}

/** The sentence for a processing job. */
const runningSentence = (r: Extract<ExplainReason, { _tag: "Running" }>, now: number) => {
  const holding = r.leases.length === 0 ? "holding no lease" : `holding lease ${r.leases.join(", ")}`
  const stale = r.stale ? "; no sign of life past its deadline, so the reaper takes it back" : ""
  const draining = r.hostDraining ? "; its host is draining and starts nothing new" : ""
  return `running: claimed by host ${r.host ?? "?"} at ${time(r.since, now)}, attempt ${r.attempt}, ${holding}` +
    stale + draining
}

/** The sentence for a due job that no live host may start. */
const drainingSentence = (r: Extract<ExplainReason, { _tag: "HostsDraining" }>, now: number) => {
  const hosts = r.hosts.slice(0, 5).join(", ") + (r.hosts.length > 5 ? `, and ${r.hosts.length - 5} more` : "")
  return `due since ${time(r.dueSince, now)}, but every worker host seen in the last ${span(GONE_AFTER_MS)} ` +
    `is draining (${hosts}), so none starts it until one resumes`
}

/** The one sentence that says `reason` for a job of type `type` (registered here or not) at `now`. */
export const sentence = (reason: ExplainReason, type: string, registered: boolean, now: number): string => {
  switch (reason._tag) {
    case "NotDue":
      return `not due until ${time(reason.runAt, now)}`
    case "Backoff":
      return `not due until ${time(reason.runAt, now)}: backoff after attempt ${reason.attempt}` +
        (withError(reason.lastError) === "" ? "" : ` (last error${withError(reason.lastError)})`)
    case "LeaseBusy":
      return busySentence(reason, type, registered, now)
    case "RateLimited":
      return rateSentence(reason, type, registered, now)
    case "Paused":
      return `paused: ${reason.what.replace(":", " ")} is paused, so the job waits until the pause is lifted; ` +
        `it looks again at ${time(reason.runAt, now)}`
    case "Due":
      return `due since ${time(reason.dueSince, now)}; waiting for a worker of queue ${reason.queue}`
    case "HostsDraining":
      return drainingSentence(reason, now)
    case "Running":
      return runningSentence(reason, now)
    case "Completed":
      return `completed at ${time(reason.at, now)}, on attempt ${reason.attempt}`
    case "Dead":
      return `dead since ${time(reason.at, now)}, after ${plural(reason.attempts, "attempt")}${
        withError(reason.lastError)
      }`
    case "Interrupted":
      return `interrupted at ${time(reason.at, now)}${withError(reason.lastError)}`
    case "Cancelled":
      return `cancelled at ${time(reason.at, now)}`
  }
}
