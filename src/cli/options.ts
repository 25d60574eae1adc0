/**
 * Every option of the command line is made here, so each one's help says what it takes, its
 * default and the environment variable it reads, and each bad value fails with one line that
 * names the option (`--limit: expected a whole number, got 'abc'`). Values are checked while
 * @effect/cli parses the command line, before any command runs, so a bad one is a usage error
 * (exit 2) whatever command it belongs to.
 *
 * Loaded for every command, `--help` included: @effect/cli and effect by their deep paths only;
 * the duration parser (which loads effect's barrel) only when a duration is actually read.
 */
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"

/** Where a value may also come from, and what it is when absent, for the help text. */
interface Help {
  readonly default?: string | undefined
  readonly env?: string | undefined
}

/** The names of the options that take a value (`--limit 5`), for the "expected a value" line. */
export const VALUE_OPTIONS = new Set<string>()

const describe = (text: string, help: Help = {}): string =>
  [
    text,
    help.default === undefined ? "" : `Default: ${help.default}.`,
    help.env === undefined ? "" : `Environment variable: ${help.env}.`
  ].filter((s) => s !== "").join(" ")

/** A bad value: the option's name, what it expects, and what it got. */
const invalid = (name: string, message: string) =>
  Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--${name}: ${message}`)))

/** A text option. `placeholder` is what the usage line shows in place of the value. */
export const text = (name: string, placeholder: string, description: string, help: Help = {}) => {
  VALUE_OPTIONS.add(`--${name}`)
  return Options.text(name).pipe(
    Options.withPseudoName(placeholder),
    Options.withDescription(describe(description, help))
  )
}

/**
 * The whole-number options, for naming the option in @effect/cli's own error for a value that
 * is not one ("'abc' is not a integer"; src/cli/main.ts, `usageMessage`).
 */
export const INTEGER_OPTIONS = new Set<string>()

/** The choice options and their values, likewise ("Expected one of the following cases: …"). */
export const CHOICE_OPTIONS = new Map<string, Array<ReadonlyArray<string>>>()

/** A whole-number option of at least `min`; below that is one line naming the option. */
export const integer = (name: string, min: number, description: string, help: Help = {}) => {
  VALUE_OPTIONS.add(`--${name}`)
  INTEGER_OPTIONS.add(`--${name}`)
  return Options.integer(name).pipe(
    Options.withDescription(describe(description, help)),
    Options.mapEffect((n) => n >= min ? Effect.succeed(n) : invalid(name, `must be at least ${min}, got ${n}`))
  )
}

/** One of `values`. */
export const choice = <const A extends string>(
  name: string,
  values: ReadonlyArray<A>,
  description: string,
  help: Help = {}
) => {
  VALUE_OPTIONS.add(`--${name}`)
  CHOICE_OPTIONS.set(`--${name}`, [...(CHOICE_OPTIONS.get(`--${name}`) ?? []), values])
  return Options.choice(name, values).pipe(Options.withDescription(describe(description, help)))
}

/** The milliseconds of a duration option's text, or the line saying what is wrong with it. */
const readDuration = (name: string, raw: string, positive: boolean) =>
  Effect.flatMap(Effect.promise(() => import("../core/duration.ts")), (durations) => {
    const parsed = (positive ? durations.parsePositiveMillis : durations.parseDurationMillis)(raw, {
      bareNumber: "seconds"
    })
    if (parsed._tag === "Right") return Effect.succeed(parsed.right)
    // An unreadable value gets an example; a readable but refused one (negative, or zero where
    // that means nothing) says why.
    return parsed.left.startsWith("is not a duration")
      ? invalid(name, `not a duration: ${JSON.stringify(raw)} (try "30 seconds", "7 days")`)
      : invalid(name, `${parsed.left.replace(/, got .*$/, "")}: ${JSON.stringify(raw)}`)
  })

/**
 * A duration, as milliseconds, read by the project's one duration parser (src/core/duration.ts,
 * loaded only when a duration is read) with a bare number meaning seconds ("30", "30s" and
 * "30 seconds" alike). `positive` refuses zero (a poll interval or grace period of nothing); a
 * `default` is text, read like any other value.
 */
export const duration = (
  name: string,
  description: string,
  options: { readonly positive?: boolean; readonly default?: string } = {}
): Options.Options<number> => {
  const option = text(name, "duration", description, { default: options.default })
  return (options.default === undefined ? option : option.pipe(Options.withDefault(options.default))).pipe(
    Options.mapEffect((raw) => readDuration(name, raw, options.positive === true))
  )
}

/**
 * How long a kind of row is kept: a duration (as milliseconds; 0 allowed), or `never` (false:
 * kept for ever). Optional: absent, the worker's default (`default`, for the help text) applies.
 */
export const keepFor = (name: string, description: string, help: { readonly default: string }) =>
  text(name, "duration|never", `${description} \`never\`: kept for ever.`, help).pipe(
    Options.mapEffect((raw): Effect.Effect<number | false, ValidationError.ValidationError> =>
      raw.trim().toLowerCase() === "never" ? Effect.succeed(false) : readDuration(name, raw, false)
    ),
    Options.optional
  )

/** A flag: absent is false. */
export const flag = (name: string, description: string) =>
  Options.boolean(name).pipe(Options.withDescription(description))

// ---------------------------------------------------------------------------------------------
// The options every command shares

const databaseUrl = text(
  "database-url",
  "url",
  "The database: postgres://… or postgresql://… (PostgreSQL), mysql://… or mariadb://… " +
    "(MySQL/MariaDB), or an SQLite file (a path such as ./jobs.db, sqlite:<name> or file:<name>).",
  { default: "./leasehold.db", env: "LEASEHOLD_DATABASE_URL" }
).pipe(
  Options.withFallbackConfig(Config.string("LEASEHOLD_DATABASE_URL")),
  Options.withDefault("./leasehold.db")
)

const prefix = text("prefix", "prefix", "Table name prefix: lowercase letters, digits and _.", {
  default: "leasehold_",
  env: "LEASEHOLD_PREFIX"
}).pipe(
  Options.withFallbackConfig(Config.string("LEASEHOLD_PREFIX")),
  Options.withDefault("leasehold_")
)

const json = flag("json", "Print JSON (numbers, null, ISO-8601 times) instead of a table, for scripts.")

/** The options every command but `worker` takes: `--database-url`, `--prefix`, `--json`. */
export const common = { databaseUrl, prefix, json }

/** The worker's: the same, but its `--json` is about its log lines. */
export const workerCommon = {
  databaseUrl,
  prefix,
  json: flag("json", "Write log lines as JSON objects (one a line, on stderr): the same as --log-format json.")
}

/** The values of `common`. */
export interface Common {
  readonly databaseUrl: string
  readonly prefix: string
  readonly json: boolean
}

/** The environment variable `--jobs` falls back to. */
export const JOBS_ENV = "LEASEHOLD_JOBS"

/**
 * `--jobs`: required, so the usage line shows it without brackets. `LEASEHOLD_JOBS` stands in
 * for it: src/cli/main.ts adds `--jobs $LEASEHOLD_JOBS` to the command line of a command that
 * takes it when it is not given (an option with a fallback would be shown as optional).
 */
export const jobsModule = text(
  "jobs",
  "module",
  "The module exporting the app's job types (.js, .mjs, or TypeScript through tsx). Required unless " +
    `${JOBS_ENV} is set.`,
  { env: JOBS_ENV }
)

/**
 * `--jobs` where a command can do without it (`jobs why`): the job types only make its answer
 * fuller. `LEASEHOLD_JOBS` stands in for it, as for the commands that need it.
 */
export const optionalJobsModule = (description: string) =>
  text("jobs", "module", description, { env: JOBS_ENV }).pipe(
    Options.withFallbackConfig(Config.string(JOBS_ENV)),
    Options.optional
  )

/** The commands that take `--jobs`. */
export const COMMANDS_WITH_JOBS: ReadonlySet<string> = new Set(["worker", "enqueue"])
