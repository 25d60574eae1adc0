/**
 * The one duration parser: every option, CLI flag and config value that takes a duration
 * reads it here, so "5 minutes", "5m" and 300000 mean the same thing everywhere and a bad value
 * is a reason string (for a typed error), never a thrown exception.
 */
import { Duration, Either, Option } from "effect"

const SHORT_UNITS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000
}
const SHORT = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)\s*$/

/** How a duration is read. */
export interface DurationParse {
  /**
   * What bare-number text ("30") means, if it is accepted at all: the CLI reads seconds. A
   * number (not text) is always milliseconds, as in Effect's `DurationInput`.
   */
  readonly bareNumber?: "millis" | "seconds" | undefined
  /**
   * Whether an infinite duration (`Duration.infinity`, the number `Infinity`) is accepted, as
   * `Infinity` ms. The text "Infinity" is always refused: a typo must not mean "for ever".
   */
  readonly infinite?: boolean | undefined
}

/**
 * The milliseconds of a duration input, or why it is not one. Accepts Effect's
 * `DurationInput` (a `Duration`, a number of ms, a bigint of ns, `[seconds, nanos]`, text such
 * as "5 minutes"), short text ("500ms", "30s", "5m", "1h", "7d", "2w") and, as text, a bare
 * number read as `bareNumber` when that is given. Negative and NaN values are refused (Duration would read them as
 * zero: a typo must not run a job early), and so is infinity unless `infinite` is set.
 */
export const parseDurationMillis = (input: unknown, options: DurationParse = {}): Either.Either<number, string> => {
  if (typeof input === "string") {
    const short = SHORT.exec(input)
    if (short !== null) return Either.right(Number(short[1]) * SHORT_UNITS[short[2]!]!)
    if (options.bareNumber !== undefined && /^\s*\d+(?:\.\d+)?\s*$/.test(input)) {
      return Either.right(Number(input) * (options.bareNumber === "seconds" ? 1000 : 1))
    }
  }
  const negative = typeof input === "number"
    ? !(input >= 0)
    : typeof input === "bigint"
    ? input < 0n
    : typeof input === "string"
    ? /^\s*-/.test(input)
    : Array.isArray(input) && input.some((x) => typeof x !== "number" || !(x >= 0))
  if (negative) return Either.left(`must not be negative or NaN, got ${String(input)}`)
  const decoded = Duration.decodeUnknown(input)
  if (Option.isNone(decoded)) return Either.left(`is not a duration: ${String(input)}`)
  if (!Duration.isFinite(decoded.value)) {
    return options.infinite === true
      ? Either.right(Number.POSITIVE_INFINITY)
      : Either.left(`must be finite, got ${String(input)}`)
  }
  return Either.right(Duration.toMillis(decoded.value))
}

/** Like `parseDurationMillis`, and the result must be above zero. */
export const parsePositiveMillis = (input: unknown, options: DurationParse = {}): Either.Either<number, string> =>
  Either.flatMap(
    parseDurationMillis(input, options),
    (ms) => ms > 0 ? Either.right(ms) : Either.left(`must be above zero, got ${String(input)}`)
  )
