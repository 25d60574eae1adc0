/**
 * The `leasehold` command line: run a worker, enqueue, inspect and repair jobs and leases,
 * migrate, drain and resume hosts. Database from `--database-url` or `LEASEHOLD_DATABASE_URL`
 * (`postgres://…`, `mysql://…`, or an SQLite file path; default `./leasehold.db`).
 * Human-readable tables by default, `--json` for scripts. Bad input gets one line on stderr
 * and a non-zero exit code (2 for a command line that does not parse), never a stack trace; so
 * does a database that cannot be reached, except for `worker`, which waits for one that may come
 * back (a warning per attempt, backoff up to 30 s).
 *
 * Start-up time matters here: this module and the declarations in ./commands are all that
 * `--help` and the parser load (@effect/cli and effect by their deep paths); what a command does
 * (./actions, ./database.ts, the runtime, the drivers) is imported only when it runs.
 */
import * as Command from "@effect/cli/Command"
import * as CommandDescriptor from "@effect/cli/CommandDescriptor"
import * as ValidationError from "@effect/cli/ValidationError"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as Terminal from "@effect/platform/Terminal"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import { dashboard } from "./commands/dashboard.ts"
import { enqueue } from "./commands/enqueue.ts"
import { drain, resume, status } from "./commands/hosts.ts"
import { jobs, jobsSubcommands } from "./commands/jobs.ts"
import { leases, leasesSubcommands } from "./commands/leases.ts"
import { limits, limitsSubcommands } from "./commands/limits.ts"
import { migrate, migrateSubcommands } from "./commands/migrate.ts"
import { schedules } from "./commands/schedules.ts"
import { worker } from "./commands/worker.ts"
import { type Env, stripAnsi } from "./colour.ts"
import { failureMessage, oneLine } from "./format.ts"
import { textLogger } from "./logging.ts"
import { CHOICE_OPTIONS, COMMANDS_WITH_JOBS, INTEGER_OPTIONS, JOBS_ENV, VALUE_OPTIONS } from "./options.ts"
import { type CliIo, CurrentSession, makeSession, type Output, processIo } from "./terminal.ts"

/** The CLI's version, as `--version` and the help show it. */
export const VERSION = "0.1.0"

const nameOf = (command: { readonly descriptor: CommandDescriptor.Command<unknown> }): string =>
  [...CommandDescriptor.getNames(command.descriptor)][0]!

/** The top-level commands' names, each with its subcommands', in the order of the help. */
const TREE: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
  [nameOf(worker), []],
  [nameOf(enqueue), []],
  [nameOf(jobs), jobsSubcommands.map(nameOf)],
  [nameOf(leases), leasesSubcommands.map(nameOf)],
  [nameOf(limits), limitsSubcommands.map(nameOf)],
  [nameOf(migrate), migrateSubcommands.map(nameOf)],
  [nameOf(drain), []],
  [nameOf(resume), []],
  [nameOf(status), []],
  [nameOf(dashboard), []],
  [nameOf(schedules), []]
]

/** The whole command tree. */
export const leasehold = Command.make("leasehold").pipe(
  Command.withDescription("durable background jobs with fenced leases, in your own SQL database"),
  Command.withSubcommands([worker, enqueue, jobs, leases, limits, migrate, drain, resume, status, dashboard, schedules])
)

/**
 * Every command's path, the root's (`[]`) first, in the order of the help: `["worker"]`, …,
 * `["jobs"]`, `["jobs", "list"]`, … (the pages of ./helpPages.ts).
 */
export const commandPaths = (): ReadonlyArray<ReadonlyArray<string>> => [
  [],
  ...TREE.flatMap(([command, subcommands]) => [[command], ...subcommands.map((sub) => [command, sub])])
]

const TOP_LEVEL = new Set(TREE.map(([command]) => command))

const cli = Command.run(leasehold, { name: "leasehold", version: VERSION })

/** The top-level command `argv` invokes, if any. */
const commandOf = (argv: ReadonlyArray<string>): string | undefined => argv.find((a) => TOP_LEVEL.has(a))

/**
 * `argv` with `--jobs $LEASEHOLD_JOBS` added for a command that takes `--jobs` and was not given
 * it. `--jobs` is declared required (its usage line says so); the environment variable stands in
 * for it here rather than as an @effect/cli fallback, which would show it as optional.
 */
export const withJobsFromEnv = (argv: ReadonlyArray<string>, env: Env): ReadonlyArray<string> => {
  const command = commandOf(argv)
  const module = env[JOBS_ENV]
  if (command === undefined || !COMMANDS_WITH_JOBS.has(command) || module === undefined || module === "") return argv
  if (argv.some((a) => a === "--jobs" || a.startsWith("--jobs="))) return argv
  // Before a `--` (after which everything is an argument), else at the end.
  const end = argv.indexOf("--")
  return end === -1 ? [...argv, "--jobs", module] : [...argv.slice(0, end), "--jobs", module, ...argv.slice(end)]
}

const LOG_LEVELS: Readonly<Record<string, LogLevel.Literal>> = {
  all: "All",
  trace: "Trace",
  debug: "Debug",
  info: "Info",
  warning: "Warning",
  error: "Error",
  fatal: "Fatal",
  none: "None"
}

/**
 * `--log-level <level>` (or `--log-level=<level>`) taken out of `argv`, wherever it is. It is an
 * @effect/cli built-in, but one that @effect/cli finds only straight after the command's name
 * (`worker --log-level debug --jobs …`, not `worker --jobs … --log-level debug`), so the CLI
 * reads it itself; the help still lists it with the built-ins.
 */
export const takeLogLevel = (
  argv: ReadonlyArray<string>
): { readonly argv: ReadonlyArray<string>; readonly level?: LogLevel.LogLevel; readonly error?: string } => {
  const rest: Array<string> = []
  let value: string | undefined
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === "--") {
      rest.push(...argv.slice(i))
      break
    }
    if (arg === "--log-level") {
      if (i + 1 >= argv.length) return { argv, error: "--log-level: expected a value" }
      value = argv[++i]!
    } else if (arg.startsWith("--log-level=")) value = arg.slice("--log-level=".length)
    else rest.push(arg)
  }
  if (value === undefined) return { argv }
  const literal = LOG_LEVELS[value.toLowerCase()]
  return literal === undefined
    ? { argv, error: `--log-level: expected one of ${Object.keys(LOG_LEVELS).join(", ")}, got '${value}'` }
    : { argv: rest, level: LogLevel.fromLiteral(literal) }
}

/** A failure of @effect/cli's own: a command line it could not parse, or a request for help. */
const isCliValidation = (failure: Option.Option<unknown>): failure is Option.Some<ValidationError.ValidationError> =>
  Option.isSome(failure) && ValidationError.isValidationError(failure.value)

/** The options among `names` that `argv` gives a value satisfying `test` (`--limit abc` or `--limit=abc`). */
const optionsGiven = (
  argv: ReadonlyArray<string>,
  names: Iterable<string>,
  test: (name: string, value: string) => boolean
): ReadonlyArray<string> => {
  const found = new Set<string>()
  for (const name of names) {
    argv.forEach((arg, i) => {
      const value = arg === name ? argv[i + 1] : arg.startsWith(`${name}=`) ? arg.slice(name.length + 1) : undefined
      if (value !== undefined && test(name, value)) found.add(name)
    })
  }
  return [...found]
}

/**
 * @effect/cli's message for a command line it could not parse (held back by ./terminal.ts), as
 * one line that names the option it is about.
 */
export const usageMessage = (text: string, argv: ReadonlyArray<string>): string => {
  const message = oneLine(stripAnsi(text))
  // A value @effect/cli's integer or choice option refused: its message does not say which
  // option, so it is found on the command line.
  const notInteger = /^'(.*)' is not a integer$/.exec(message)
  if (notInteger !== null) {
    const names = optionsGiven(argv, INTEGER_OPTIONS, (_, value) => value === notInteger[1])
    return `${names.length > 0 ? `${names.join(", ")}: ` : ""}expected a whole number, got '${notInteger[1]}'`
  }
  const notChoice = /^Expected one of the following cases: (.*)$/.exec(message)
  if (notChoice !== null) {
    const bad: Array<string> = []
    const names = optionsGiven(argv, CHOICE_OPTIONS.keys(), (name, value) => {
      const values = CHOICE_OPTIONS.get(name)!.find((vs) => vs.join(", ") === notChoice[1])
      if (values === undefined || values.includes(value)) return false
      bad.push(value)
      return true
    })
    return `${names.length > 0 ? `${names.join(", ")}: ` : ""}expected one of ${notChoice[1]}${
      bad.length > 0 ? `, got '${bad[0]}'` : ""
    }`
  }
  const missing = /^Expected to find option: '(--[^']+)'/.exec(message)
  if (missing !== null) {
    return missing[1] === "--jobs"
      ? `--jobs: missing (name the job module with --jobs or ${JOBS_ENV})`
      : `${missing[1]}: missing (this option is required)`
  }
  const noValue = /^Expected a value following option: '(--[^']+)'/.exec(message)
  if (noValue !== null) return `${noValue[1]}: expected a value`
  const unknown = /^Received unknown argument: '(.*)'$/.exec(message)
  if (unknown !== null) {
    const arg = unknown[1]!
    // A value option given last, with no value, is left over by the parser as "unknown".
    if (VALUE_OPTIONS.has(arg) && argv.at(-1) === arg) return `${arg}: expected a value`
    return arg.startsWith("-") ? `unknown option ${arg}` : `unexpected argument '${arg}'`
  }
  if (/^Invalid subcommand for /.test(message)) {
    // The command path the arguments do name, then what follows it.
    const paths = commandPaths()
    const known = new Set(paths.map((p) => p.join(" ")))
    const path: Array<string> = []
    for (const arg of argv) {
      if (!known.has([...path, arg].join(" "))) break
      path.push(arg)
    }
    const next = argv[path.length]
    const children = paths.filter((p) => p.length === path.length + 1 && path.every((name, i) => p[i] === name))
      .map((p) => p.at(-1)!)
    if (next !== undefined && next.startsWith("-")) return `unknown option ${next}`
    if (next !== undefined) {
      return `unknown command '${next}'${path.length > 0 ? ` for ${path.join(" ")}` : ""}; use one of ${
        children.join(", ")
      }`
    }
  }
  return message === "" ? "invalid command line" : message
}

/**
 * The services @effect/cli asks for. No option here reads a file, so the file system is
 * @effect/platform's no-op one (NodeContext would load the whole Node platform for nothing); the
 * terminal is the run's stdout, and only `--wizard`, the one thing that prompts, gets node's real
 * terminal.
 */
const platformLayer = (
  argv: ReadonlyArray<string>,
  stdout: Output
): Layer.Layer<FileSystem.FileSystem | Path.Path | Terminal.Terminal> => {
  const terminal: Layer.Layer<Terminal.Terminal> = argv.includes("--wizard")
    ? Layer.unwrapEffect(
      Effect.promise(() => import("@effect/platform-node/NodeTerminal")).pipe(Effect.map((m) => m.layer))
    )
    : Layer.succeed(Terminal.Terminal, {
      columns: Effect.sync(() => stdout.columns ?? 80),
      rows: Effect.sync(() => stdout.rows ?? 24),
      isTTY: Effect.sync(() => stdout.isTTY === true),
      readInput: Effect.dieMessage("leasehold does not prompt (only --wizard does)"),
      readLine: Effect.dieMessage("leasehold does not prompt (only --wizard does)"),
      display: (text) => Effect.sync(() => void stdout.write(text))
    })
  return Layer.mergeAll(FileSystem.layerNoop({}), Path.layer, terminal)
}

/**
 * The environment as config (`--database-url` and `--prefix` fall back to LEASEHOLD_DATABASE_URL
 * and LEASEHOLD_PREFIX through it): the run's `env`, read the way effect's own `fromEnv` reads
 * the process's (flat names, `_` between path segments).
 */
const configFrom = (env: Env): ConfigProvider.ConfigProvider =>
  ConfigProvider.fromMap(
    new Map(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined)),
    { pathDelim: "_" }
  )

/**
 * Runs the CLI on `argv` (without node and script) with `io`'s environment and streams, printing
 * failures as one line; succeeds with the exit code (0; 1 for a failed command; 2 for a command
 * line that does not parse). Interrupting it is how SIGINT and SIGTERM stop a worker (`run`).
 */
export const main = (argv: ReadonlyArray<string>, io: CliIo = processIo()): Effect.Effect<number> => {
  const logLevel = takeLogLevel(argv)
  if (logLevel.error !== undefined) {
    const error = logLevel.error
    return Effect.sync(() => {
      io.stderr.write(`leasehold: ${error}\n`)
      return 2
    })
  }
  const args = withJobsFromEnv(logLevel.argv, io.env)
  // The worker reports what it does at info; other commands speak up only for warnings;
  // --log-level overrides either.
  const level = logLevel.level ?? (commandOf(args) === "worker" ? LogLevel.Info : LogLevel.Warning)
  const session = makeSession(io)
  return cli(["node", "leasehold", ...args]).pipe(
    Effect.as(0),
    Effect.catchAllCause((cause) => {
      if (Cause.isInterruptedOnly(cause)) return Effect.succeed(0)
      const failure = Cause.failureOption(cause)
      if (isCliValidation(failure)) {
        const held = session.takeHeld()
        // Asking for help is not a failure; a bad command line is a usage error (exit 2).
        if (ValidationError.isHelpRequested(failure.value)) return Effect.succeed(0)
        return Effect.sync(() => {
          io.stderr.write(`leasehold: ${usageMessage(held, args)}\n`)
          return 2
        })
      }
      return Effect.sync(() => {
        io.stderr.write(`leasehold: ${failureMessage(cause)}\n`)
        return 1
      })
    }),
    Logger.withMinimumLogLevel(level),
    Effect.provide(Logger.replace(Logger.defaultLogger, textLogger)),
    Effect.provide(platformLayer(args, io.stdout)),
    Effect.withConfigProvider(configFrom(io.env)),
    Effect.provideService(CurrentSession, session),
    Effect.withConsole(session.console)
  )
}

/**
 * Runs the CLI as a process (src/cli/bin.ts): SIGINT and SIGTERM interrupt it, which closes the
 * worker's scope (graceful shutdown), and the exit code says how it went.
 */
export const run = (argv: ReadonlyArray<string>): void =>
  NodeRuntime.runMain(
    Effect.flatMap(main(argv), (code) => Effect.sync(() => void (process.exitCode = code))),
    { disableErrorReporting: true, disablePrettyLogger: true }
  )

/** What a run of the CLI inside the calling process printed, and the exit code it would have had. */
export interface InProcessResult {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** How `runInProcess` runs the CLI. */
export interface InProcessOptions {
  /** The environment the CLI reads instead of the process's (LEASEHOLD_*, NO_COLOR, COLUMNS, …). */
  readonly env?: Env
  /** Both streams look like a terminal this many columns wide (colour, table width). */
  readonly terminal?: { readonly columns: number }
  /** Aborting it does what SIGINT or SIGTERM does to the binary. */
  readonly signal?: AbortSignal
  /** Called with each piece of stderr text as it is written (a running worker's log lines). */
  readonly onStderr?: (text: string) => void
}

/**
 * Runs the CLI on `argv` inside the calling process, as the `leasehold` binary would in a
 * process of its own (minus bin.ts's help pages, src/cli/fastHelp.ts), but with `options.env`
 * for the process environment (default: this process's) and with stdout and stderr captured.
 * Aborting `options.signal` does what SIGINT or SIGTERM does to the binary (a worker finishes
 * its running jobs within the grace period, then the run ends with code 0). Nothing here touches
 * `process.exitCode` or exits. What is the process's stays the process's: the working directory,
 * and tsx's hooks once a TypeScript job module registered them (./jobModule.ts). The CLI tests
 * use it (test/support/cli.ts) to spare each command a node start-up.
 */
export const runInProcess = async (
  argv: ReadonlyArray<string>,
  options: InProcessOptions = {}
): Promise<InProcessResult> => {
  let stdout = ""
  let stderr = ""
  const stream = (append: (text: string) => void): Output =>
    options.terminal === undefined
      ? { write: append }
      : { isTTY: true, columns: options.terminal.columns, rows: 24, write: append }
  const io: CliIo = {
    env: options.env ?? process.env,
    stdout: stream((text) => void (stdout += text)),
    stderr: stream((text) => {
      stderr += text
      options.onStderr?.(text)
    })
  }
  const fiber = Effect.runFork(main(argv, io))
  const interrupt = () => fiber.unsafeInterruptAsFork(fiber.id())
  if (options.signal?.aborted === true) interrupt()
  options.signal?.addEventListener("abort", interrupt, { once: true })
  const exit = await Effect.runPromise(Fiber.await(fiber))
  options.signal?.removeEventListener("abort", interrupt)
  // Like the binary: an interrupted run exits 0 (src/cli/main.ts `run`, NodeRuntime's teardown),
  // anything main did not catch 1.
  const code = Exit.isSuccess(exit) ? exit.value : Cause.isInterruptedOnly(exit.cause) ? 0 : 1
  return { code, stdout, stderr }
}
