/**
 * What the command line prints: human-readable tables fitted to the terminal, JSON for `--json`
 * (numbers, null and ISO-8601 times), and the one line a failure gets on stderr (never a stack
 * trace). Loaded for every command, so effect by its deep paths only.
 */
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import { isMissingSchema } from "../adapters/schemaErrors.ts"
import { currentWidth } from "./terminal.ts"

/** A problem with what the user typed or pointed us at: printed as one line. */
export class CliError extends Data.TaggedError("CliError")<{ readonly message: string }> {}

/** A stack frame line (`    at f (file.js:1:2)`, `    at file.js:1:2`), as some messages carry them. */
const STACK_FRAME = /^\s+at\s.*(:\d+:\d+\)?|\((native|<anonymous>)\))$/

/** `text` as one line: stack frames dropped, every run of whitespace (newlines too) one space. */
export const oneLine = (text: string): string =>
  text.split("\n").filter((l) => !STACK_FRAME.test(l)).join(" ").replace(/\s+/g, " ").trim()

/** What an error says about itself: its message, else its tag, else its text. */
const ownMessage = (e: unknown): string => {
  const message = (e as { message?: unknown } | null)?.message
  if (typeof message === "string" && message !== "" && message !== "An error has occurred") return message
  const tag = (e as { _tag?: unknown } | null)?._tag
  if (typeof tag === "string") return tag
  return typeof message === "string" && message !== "" ? message : String(e)
}

/**
 * The message at the bottom of an error's `cause` chain (or the first of an AggregateError):
 * a driver's "connect ECONNREFUSED" says more than the wrappers around it. An Effect failure
 * thrown by `runSync`/`runPromise` (a FiberFailure, whose text is a whole pretty-printed cause
 * with its stack) is unwrapped to the error inside it.
 */
export const rootMessage = (e: unknown): string => {
  let current: unknown = e
  for (let i = 0; i < 6; i++) {
    if (Runtime.isFiberFailure(current)) {
      current = Cause.squash(current[Runtime.FiberFailureCauseId])
      continue
    }
    const cause = (current as { cause?: unknown } | null)?.cause
    if (cause === undefined || cause === null) break
    current = cause
  }
  if (current instanceof AggregateError && current.errors.length > 0) current = current.errors[0]
  return oneLine(ownMessage(current))
}

/**
 * The one line a failed command prints (after "leasehold: "). A missing table or column most
 * likely means the schema was never migrated (or is older than the code), so that line says what
 * to run.
 */
export const failureMessage = (cause: Cause.Cause<unknown>): string =>
  Option.match(Cause.failureOption(cause), {
    onNone: () => rootMessage(Cause.squash(cause)),
    onSome: (e) => {
      if (e instanceof CliError) return oneLine(e.message)
      const message = rootMessage(e)
      return isMissingSchema(e) ? `${message} (run \`leasehold migrate\` first?)` : message
    }
  })

/** A cell's text: null as "-", whitespace (newlines too) folded. */
const cellText = (v: unknown): string => (v === null || v === undefined ? "-" : String(v).replace(/\s+/g, " ").trim())

/** `text` cut to `width` characters, the last one an ellipsis when anything was cut. */
const fit = (text: string, width: number): string =>
  text.length <= width ? text : width <= 1 ? "…".slice(0, width) : `${text.slice(0, width - 1)}…`

/**
 * Column widths that fit `budget` characters: the widest columns give way first (each down to
 * its header's width, and at least 4), the `kept` ones (ids) only when the others cannot give
 * more; if even that is too wide, the table is as narrow as it can be and runs over.
 */
const fitWidths = (
  natural: ReadonlyArray<number>,
  minimum: ReadonlyArray<number>,
  kept: ReadonlyArray<boolean>,
  budget: number
): ReadonlyArray<number> => {
  const shrink = (widths: ReadonlyArray<number>, which: (i: number) => boolean): ReadonlyArray<number> => {
    const capped = (cap: number) => widths.map((w, i) => (which(i) ? Math.min(w, Math.max(cap, minimum[i]!)) : w))
    const total = (ws: ReadonlyArray<number>) => ws.reduce((sum, w) => sum + w, 0)
    let cap = Math.max(...widths)
    if (total(widths) <= budget) return widths
    while (cap > 1 && total(capped(cap)) > budget) cap--
    // Hand what the cap left over back to the capped columns, left to right.
    let spare = Math.max(0, budget - total(capped(cap)))
    return capped(cap).map((w, i) => {
      const extra = Math.min(spare, widths[i]! - w)
      spare -= extra
      return w + extra
    })
  }
  return shrink(shrink(natural, (i) => !kept[i]), () => true)
}

/**
 * Records as a plain-text table with the given columns: "(none)" when empty, null as "-",
 * whitespace folded so that a row stays one line, and as wide as `width` allows (`print` hands
 * it over: the terminal's width, or unlimited when piped; ./colour.ts, `outputWidth`), long
 * cells cut with "…" (the `keep` columns, such as ids, last).
 */
export const table = (
  records: ReadonlyArray<object>,
  columns: ReadonlyArray<string>,
  options: { readonly keep?: ReadonlyArray<string>; readonly width: number }
): string => {
  const rows = (records as ReadonlyArray<Record<string, unknown>>).map((r) => columns.map((c) => cellText(r[c])))
  if (rows.length === 0) return "(none)"
  const natural = columns.map((c, i) => Math.max(c.length, ...rows.map((r) => r[i]!.length)))
  const minimum = columns.map((c, i) => Math.min(natural[i]!, Math.max(c.length, 4)))
  const kept = columns.map((c) => options.keep?.includes(c) === true)
  const gaps = 2 * (columns.length - 1)
  const widths = fitWidths(natural, minimum, kept, options.width - gaps)
  const line = (values: ReadonlyArray<string>) =>
    values.map((v, i) => fit(v, widths[i]!).padEnd(widths[i]!)).join("  ").trimEnd()
  return [line(columns), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n")
}

/**
 * Prints `value` as JSON with `--json`, otherwise the human text (built only when needed, for
 * output `width` characters wide: the run's, src/cli/terminal.ts `currentWidth`).
 */
export const print = (
  c: { readonly json: boolean },
  value: unknown,
  human: (width: number) => string
): Effect.Effect<void> =>
  c.json
    ? Console.log(JSON.stringify(value, null, 2))
    : Effect.flatMap(currentWidth, (width) => Console.log(human(width)))

/** Epoch ms as an ISO-8601 time; null stays null. */
export const iso = (ms: number | null | undefined): string | null =>
  ms === null || ms === undefined ? null : new Date(ms).toISOString()

/** A span for people: "45s", "12m", "3h"; a negative one reads "expired … ago". */
export const inHuman = (ms: number): string => {
  const s = Math.round(Math.abs(ms) / 1000)
  const text = s < 120 ? `${s}s` : s < 7200 ? `${Math.round(s / 60)}m` : `${Math.round(s / 3600)}h`
  return ms < 0 ? `expired ${text} ago` : text
}
