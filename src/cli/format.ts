/**
 * What the command line prints: human-readable tables, JSON for `--json`, times, and the one
 * line a failure gets on stderr (never a stack trace; README.md, "The command line").
 */
import { Cause, Console, Data, Effect, Option } from "effect"

/** A problem with what the user typed or pointed us at: printed as one line. */
export class CliError extends Data.TaggedError("CliError")<{ readonly message: string }> {}

/**
 * The message at the bottom of an error's `cause` chain (or the first of an AggregateError):
 * a driver's "connect ECONNREFUSED" says more than the wrappers around it.
 */
export const rootMessage = (e: unknown): string => {
  let current: unknown = e
  for (let i = 0; i < 5; i++) {
    const cause = (current as { cause?: unknown } | null)?.cause
    if (cause === undefined || cause === null) break
    current = cause
  }
  if (current instanceof AggregateError && current.errors.length > 0) current = current.errors[0]
  const message = (current as { message?: unknown } | null)?.message
  return typeof message === "string" && message !== "" ? message : String(current)
}

/**
 * The one line a failed command prints (after "leasehold: "). A missing table most likely
 * means the schema was never migrated, so the line says what to run.
 */
export const failureMessage = (cause: Cause.Cause<unknown>): string => {
  const raw = Option.match(Cause.failureOption(cause), {
    onNone: () => rootMessage(Cause.squash(cause)),
    onSome: (e) => (e instanceof CliError ? e.message : rootMessage(e))
  })
  return /no such table|doesn't exist|does not exist/.test(raw) ? `${raw} (run \`leasehold migrate\` first?)` : raw
}

/**
 * Records as a plain-text table with the given columns: "(none)" when empty, null as "-",
 * whitespace folded and cells cut at 60 characters so a row stays one line.
 */
export const table = (records: ReadonlyArray<object>, columns: ReadonlyArray<string>): string => {
  const rows = records as ReadonlyArray<Record<string, unknown>>
  if (rows.length === 0) return "(none)"
  const cell = (v: unknown) => (v === null || v === undefined ? "-" : String(v).replace(/\s+/g, " "))
  const widths = columns.map((c) => Math.min(60, Math.max(c.length, ...rows.map((r) => cell(r[c]).length))))
  const line = (values: ReadonlyArray<string>) =>
    values.map((v, i) => v.slice(0, widths[i]).padEnd(widths[i]!)).join("  ").trimEnd()
  return [
    line(columns),
    line(widths.map((w) => "-".repeat(w))),
    ...rows.map((r) => line(columns.map((c) => cell(r[c]))))
  ].join("\n")
}

/** Prints `value` as JSON with `--json`, otherwise the human text (built only when needed). */
export const print = (c: { readonly json: boolean }, value: unknown, human: () => string): Effect.Effect<void> =>
  Console.log(c.json ? JSON.stringify(value, null, 2) : human())

/** Epoch ms as an ISO time; null stays null. */
export const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString())

/** A span for people: "45s", "12m", "3h"; a negative one reads "expired … ago". */
export const inHuman = (ms: number): string => {
  const s = Math.round(Math.abs(ms) / 1000)
  const text = s < 120 ? `${s}s` : s < 7200 ? `${Math.round(s / 60)}m` : `${Math.round(s / 3600)}h`
  return ms < 0 ? `expired ${text} ago` : text
}
