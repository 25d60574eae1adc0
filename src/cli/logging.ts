/**
 * The CLI's loggers: every log line goes to stderr, so `--json` output on stdout stays
 * parseable; logfmt by default, JSON objects for `worker --json`.
 */
import * as Logger from "effect/Logger"

/** logfmt lines on stderr: every command's logger. */
export const textLogger = Logger.withConsoleError(Logger.logfmtLogger)

/** JSON lines on stderr: the worker's with `--json`. */
export const jsonLogger = Logger.withConsoleError(Logger.jsonLogger)
