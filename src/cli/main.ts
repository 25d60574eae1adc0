/**
 * The `leasehold` command line: run a worker, enqueue, inspect and repair jobs and leases,
 * migrate, drain and resume hosts. Database from `--database-url` or `LEASEHOLD_DATABASE_URL`
 * (`postgres://…`, `mysql://…`, or an SQLite file path; default `./leasehold.db`).
 * Human-readable tables by default, `--json` for scripts. Bad input gets one line on stderr
 * and a non-zero exit code, never a stack trace; so does a database that cannot be reached,
 * except for `worker`, which waits for it (a warning per attempt, backoff up to 30 s).
 *
 * The commands live in ./commands, the database set-up in ./database.ts, the output in
 * ./format.ts; this file assembles the tree and runs it.
 */
import { Command } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Effect, Logger, LogLevel, Option } from "effect"
import { enqueue } from "./commands/enqueue.ts"
import { drain, resume, status } from "./commands/hosts.ts"
import { jobs } from "./commands/jobs.ts"
import { leases } from "./commands/leases.ts"
import { migrate } from "./commands/migrate.ts"
import { worker } from "./commands/worker.ts"
import { failureMessage } from "./format.ts"

export { databaseLayer, workerDatabaseLayer } from "./database.ts"
export { CliError } from "./format.ts"
export { loadJobs } from "./options.ts"

/** The whole command tree. */
export const leasehold = Command.make("leasehold").pipe(
  Command.withDescription("durable background jobs with fenced leases, in your own SQL database"),
  Command.withSubcommands([worker, enqueue, jobs, leases, migrate, drain, resume, status])
)

const cli = Command.run(leasehold, { name: "leasehold", version: "0.1.0" })

/** Failures @effect/cli has already printed its own message for (bad commands and options). */
const CLI_VALIDATION_ERRORS = new Set([
  "CommandMismatch",
  "MissingValue",
  "InvalidValue",
  "InvalidArgument",
  "UnclusteredFlag",
  "MultipleValuesDetected",
  "CorrectedFlag",
  "NoBuiltInMatch",
  "MissingFlag",
  "MissingSubcommand",
  "HelpRequested"
])

const validationTag = (failure: Option.Option<unknown>): string | undefined => {
  if (Option.isNone(failure)) return undefined
  const value = failure.value
  if (typeof value !== "object" || value === null || !("_tag" in value)) return undefined
  const tag = String((value as { _tag: unknown })._tag)
  return CLI_VALIDATION_ERRORS.has(tag) ? tag : undefined
}

/** Runs the CLI on `argv` (without node and script), printing failures as one line. */
export const main = (argv: ReadonlyArray<string>) =>
  cli(["node", "leasehold", ...argv]).pipe(
    Effect.catchAllCause((cause) => {
      if (Cause.isInterruptedOnly(cause)) return Effect.void
      const tag = validationTag(Cause.failureOption(cause))
      // Asking for help is not a failure; a bad command line is a usage error (exit 2).
      if (tag !== undefined) return Effect.sync(() => void (process.exitCode = tag === "HelpRequested" ? 0 : 2))
      return Effect.sync(() => {
        process.stderr.write(`leasehold: ${failureMessage(cause)}\n`)
        process.exitCode = 1
      })
    }),
    // Logs go to stderr, so --json output on stdout stays parseable; commands other than the
    // worker only speak up for warnings.
    Logger.withMinimumLogLevel(LogLevel.Warning),
    Effect.provide(Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger))),
    Effect.provide(NodeContext.layer)
  )

/**
 * Runs the CLI as a process: SIGINT and SIGTERM interrupt it, which closes the worker's scope
 * (graceful shutdown), and the exit code says how it went.
 */
export const run = (argv: ReadonlyArray<string>): void =>
  NodeRuntime.runMain(main(argv), { disableErrorReporting: true, disablePrettyLogger: true })
