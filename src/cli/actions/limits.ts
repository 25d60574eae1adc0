/** What `limits list | set | clear` do (declared in ../commands/limits.ts, loaded only to run). */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { parseDurationMillis } from "../../core/duration.ts"
import type { LimitRow } from "../../core/limits.ts"
import * as Limits from "../../runtime/limits.ts"
import { withStore } from "../database.ts"
import { CliError, iso, print, table } from "../format.ts"
import type { Common } from "../options.ts"

/** A limits row as JSON: ISO-8601 times. */
const rowJson = (r: LimitRow) => ({ ...r, pausedAt: iso(r.pausedAt), updatedAt: iso(r.updatedAt) })

/** A row for people: the rate as `N/period`, `-` for no override. */
const rowText = (r: LimitRow) => ({
  scope: r.scope,
  target: r.target,
  concurrency: r.concurrency ?? "-",
  typeCap: r.typeCap ?? "-",
  rate: r.rateLimit === null || r.ratePeriodMs === null ? "-" : `${r.rateLimit}/${r.ratePeriodMs}ms`,
  paused: r.paused ? `yes${r.pausedBy === null ? "" : ` (${r.pausedBy})`}` : "no"
})

const COLUMNS = ["scope", "target", "concurrency", "typeCap", "rate", "paused"]

/** `limits list`. */
export const list = (c: Common) =>
  withStore(
    c,
    { create: false },
    Effect.gen(function*() {
      const rows = yield* Limits.list
      yield* print(c, rows.map(rowJson), (width) => table(rows.map(rowText), COLUMNS, { keep: ["target"], width }))
    })
  )

/** The target options every `limits` subcommand takes. */
export interface TargetConfig extends Common {
  readonly type: Option.Option<string>
  readonly queue: Option.Option<string>
  readonly key: Option.Option<string>
}

const targetOf = (c: TargetConfig): Effect.Effect<Limits.LimitTarget, CliError> => {
  const given: Array<Limits.LimitTarget> = []
  if (Option.isSome(c.type)) given.push({ type: c.type.value })
  if (Option.isSome(c.queue)) given.push({ queue: c.queue.value })
  if (Option.isSome(c.key)) given.push({ key: c.key.value })
  return given.length === 1
    ? Effect.succeed(given[0]!)
    : Effect.fail(new CliError({ message: "give exactly one of --type, --queue or --key" }))
}

/** The values of `limits set`. */
export interface SetConfig extends TargetConfig {
  readonly concurrency: Option.Option<number>
  readonly typeCap: Option.Option<number>
  readonly rate: Option.Option<string>
  readonly unset: Option.Option<string>
  readonly pause: boolean
  readonly resume: boolean
  readonly by: Option.Option<string>
}

/** `100/1m` → 100 per minute; a bad one says what is expected. */
const rateOf = (text: string): Effect.Effect<{ readonly limit: number; readonly period: number }, CliError> => {
  const [count, period, ...rest] = text.split("/")
  const limit = Number(count)
  const ms = period === undefined ? Either.left("missing") : parseDurationMillis(period.trim())
  if (rest.length > 0 || !Number.isSafeInteger(limit) || Either.isLeft(ms)) {
    return Effect.fail(new CliError({ message: `--rate must be N/period, as 100/1m or 5/1s; got ${text}` }))
  }
  return Effect.succeed({ limit, period: ms.right })
}

const UNSETTABLE = new Set(["concurrency", "type-cap", "rate"])

/** `limits set`: a field not given stays as it is. */
export const set = (c: SetConfig) =>
  withStore(
    c,
    { create: false },
    Effect.gen(function*() {
      const target = yield* targetOf(c)
      if (c.pause && c.resume) return yield* new CliError({ message: "give --pause or --resume, not both" })
      const unset: Array<string> = Option.match(c.unset, {
        onNone: () => [],
        onSome: (u) => u.split(",").map((s) => s.trim())
      })
      const unknown = unset.filter((u) => !UNSETTABLE.has(u))
      if (unknown.length > 0) {
        return yield* new CliError({
          message: `--unset takes concurrency, type-cap or rate; got ${unknown.join(", ")}`
        })
      }
      const rate = Option.isSome(c.rate) ? yield* rateOf(c.rate.value) : unset.includes("rate") ? null : undefined
      const row = yield* Effect.mapError(
        Limits.set({
          ...target,
          concurrency: Option.getOrUndefined(c.concurrency) ?? (unset.includes("concurrency") ? null : undefined),
          typeCap: Option.getOrUndefined(c.typeCap) ?? (unset.includes("type-cap") ? null : undefined),
          rate,
          paused: c.pause ? true : c.resume ? false : undefined,
          by: Option.getOrUndefined(c.by)
        } as Limits.LimitSettings),
        (e) => (e._tag === "LimitInputError" ? new CliError({ message: e.message }) : e)
      )
      yield* print(c, rowJson(row), (width) => table([rowText(row)], COLUMNS, { keep: ["target"], width }))
    })
  )

/** `limits clear`: the declared limits apply again, and a pause is lifted. */
export const clear = (c: TargetConfig) =>
  withStore(
    c,
    { create: false },
    Effect.gen(function*() {
      const target = yield* targetOf(c)
      const cleared = yield* Effect.mapError(
        Limits.clear(target),
        (e) => (e._tag === "LimitInputError" ? new CliError({ message: e.message }) : e)
      )
      yield* print(c, { cleared }, () => (cleared ? "cleared" : "no limits were set for it"))
    })
  )
