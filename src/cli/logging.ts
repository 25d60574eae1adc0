/**
 * The CLI's loggers: every log line goes to stderr, so `--json` output on stdout stays
 * parseable; logfmt by default, JSON objects or Effect's pretty lines for the worker's
 * `--log-format` (`--json` is `--log-format json`).
 */
import * as Logger from "effect/Logger"

/** logfmt lines on stderr: every command's logger. */
export const textLogger = Logger.withConsoleError(Logger.logfmtLogger)

/** JSON lines on stderr: the worker's with `--json`. */
export const jsonLogger = Logger.withConsoleError(Logger.jsonLogger)

/** How the worker writes its log lines (`--log-format`). */
export type LogFormat = "logfmt" | "json" | "pretty"

/** The worker's logger for `format`. */
export const workerLogger = (format: LogFormat) =>
  format === "json"
    ? jsonLogger
    : format === "pretty"
    ? Logger.prettyLogger({ stderr: true })
    : textLogger
