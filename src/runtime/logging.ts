/**
 * Where leasehold's log lines go for an app that does not provide an Effect `Logger` itself: the
 * Promise API (`createLeasehold({ logger })`, `startWorker({ logger })`) and the dashboard
 * (`createDashboard({ logger })`). A minimum level; leasehold's own writer, logfmt or JSON, on
 * stdout or stderr; or the app's logger: an object with pino's shape (pino, bunyan and most
 * others take `info(fields, message)`) or a function. The annotations leasehold attaches (job
 * id, name, attempt, queue, outcome, duration, lease) arrive as fields of their own.
 * docs/logging.md says which lines each level has.
 */
import { Cause, HashMap, Layer, Logger, LogLevel } from "effect"

/** A log line's level, as leasehold's options name them. */
export type LogLevelName = "debug" | "info" | "warning" | "error"

/** One log line as a logger function receives it. */
export interface LogEntry {
  readonly level: LogLevelName
  readonly message: string
  /** The line's annotations (jobId, jobName, attempt, queue, outcome, durationMs, leaseName, …). */
  readonly annotations: Readonly<Record<string, unknown>>
  /** What failed, when the line reports a failure: the error itself where there is one. */
  readonly cause: unknown
  readonly time: Date
}

/** The shape of pino's logger (and bunyan's, and most others'): a method per level, fields first. */
export interface PinoLikeLogger {
  readonly debug: (fields: Record<string, unknown>, message: string) => void
  readonly info: (fields: Record<string, unknown>, message: string) => void
  readonly warn: (fields: Record<string, unknown>, message: string) => void
  readonly error: (fields: Record<string, unknown>, message: string) => void
}

/** How leasehold logs (`logger` of `createLeasehold`, `startWorker` and `createDashboard`). */
export interface LoggerOptions {
  /** The least severe level written (default "info"); "none" writes nothing. */
  readonly level?: LogLevelName | "none" | undefined
  /** The format of leasehold's own writer (default "logfmt"); ignored with a logger of the app's. */
  readonly format?: "logfmt" | "json" | undefined
  /**
   * Where lines go: leasehold's writer on "stdout" (default) or "stderr", or the app's logger (a
   * pino-shaped object or a function of each entry).
   */
  readonly to?: "stdout" | "stderr" | PinoLikeLogger | ((entry: LogEntry) => void) | undefined
}

const LEVELS: Record<LogLevelName | "none", LogLevel.LogLevel> = {
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warning: LogLevel.Warning,
  error: LogLevel.Error,
  none: LogLevel.None
}

/** An Effect log level as leasehold names it (Trace counts as debug, Fatal as error). */
const nameOf = (level: LogLevel.LogLevel): LogLevelName =>
  LogLevel.lessThanEqual(level, LogLevel.Debug)
    ? "debug"
    : LogLevel.lessThanEqual(level, LogLevel.Info)
    ? "info"
    : LogLevel.lessThanEqual(level, LogLevel.Warning)
    ? "warning"
    : "error"

/** An entry from what Effect's logger is given. */
const entryOf = (options: Logger.Logger.Options<unknown>): LogEntry => {
  const parts = Array.isArray(options.message) ? options.message : [options.message]
  const annotations: Record<string, unknown> = {}
  for (const [key, value] of HashMap.toEntries(options.annotations)) annotations[key] = value
  // Extra parts of a message (an error passed beside the text) count as what failed.
  const extra = parts.slice(1)
  const cause = !Cause.isEmpty(options.cause)
    ? Cause.squash(options.cause)
    : extra.length === 0
    ? undefined
    : extra.length === 1
    ? extra[0]
    : extra
  return {
    level: nameOf(options.logLevel),
    message: parts.length === 0 ? "" : String(parts[0]),
    annotations,
    cause,
    time: options.date
  }
}

/** A cause as a line of text: an error's name and message, or the value as JSON. */
const causeText = (cause: unknown): string =>
  cause instanceof Error ? `${cause.name}: ${cause.message}` : typeof cause === "string" ? cause : safeJson(cause)

const safeJson = (value: unknown): string => {
  try {
    return JSON.stringify(value, (_, v) => (typeof v === "bigint" ? v.toString() : v)) ?? String(value)
  } catch {
    return String(value)
  }
}

/** One JSON object per line: time, level, message, each annotation, and the cause as text. */
const jsonLine = (entry: LogEntry): string =>
  safeJson({
    ...entry.annotations,
    time: entry.time.toISOString(),
    level: entry.level,
    message: entry.message,
    ...(entry.cause === undefined ? {} : { cause: causeText(entry.cause) })
  })

/** The Effect logger for `options.format` and `options.to`. */
export const makeLogger = (options: LoggerOptions): Logger.Logger<unknown, void> => {
  const to = options.to ?? "stdout"
  if (typeof to === "function") return Logger.make((o) => to(entryOf(o)))
  if (typeof to === "object") {
    return Logger.make((o) => {
      const entry = entryOf(o)
      const fields = entry.cause === undefined ? entry.annotations : { ...entry.annotations, err: entry.cause }
      const method = entry.level === "warning" ? "warn" : entry.level
      to[method](fields, entry.message)
    })
  }
  const write = to === "stderr"
    ? (line: string) => void process.stderr.write(`${line}\n`)
    : (line: string) => void process.stdout.write(`${line}\n`)
  if (options.format === "json") return Logger.make((o) => write(jsonLine(entryOf(o))))
  return Logger.map(Logger.logfmtLogger, write)
}

/**
 * A layer that makes every fiber started under it log through `logger` (made by `makeLogger`)
 * from `level` up: `logger` takes the place of `replacing` (Effect's default logger, or the one
 * a worker's own logger takes over from), other loggers stay (a tracer's).
 */
export const loggerLayer = (
  logger: Logger.Logger<unknown, void>,
  level: LoggerOptions["level"],
  replacing: Logger.Logger<unknown, unknown> = Logger.defaultLogger
): Layer.Layer<never> =>
  Layer.merge(Logger.replace(replacing, logger), Logger.minimumLogLevel(LEVELS[level ?? "info"] ?? LogLevel.Info))

/** Checks `logger` options given from JavaScript; the problem, or undefined when they are usable. */
export const loggerProblem = (options: unknown): string | undefined => {
  if (options === undefined) return undefined
  if (typeof options !== "object" || options === null) return "logger must be an object: { level, format, to }"
  const { format, level, to } = options as LoggerOptions
  if (level !== undefined && !(level in LEVELS)) {
    return `logger.level must be one of ${Object.keys(LEVELS).join(", ")}, got ${String(level)}`
  }
  if (format !== undefined && format !== "logfmt" && format !== "json") {
    return `logger.format must be "logfmt" or "json", got ${String(format)}`
  }
  if (
    to !== undefined && to !== "stdout" && to !== "stderr" && typeof to !== "function" &&
    !(typeof to === "object" && to !== null &&
      ["debug", "info", "warn", "error"].every((m) =>
        typeof (to as unknown as Record<string, unknown>)[m] === "function"
      ))
  ) {
    return "logger.to must be \"stdout\", \"stderr\", a function, or a logger with debug, info, warn and error methods"
  }
  return undefined
}
