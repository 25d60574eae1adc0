/**
 * What several commands share: the database, prefix and `--json` options, the job module
 * (`--jobs`/`LEASEHOLD_JOBS`) and how a duration flag is read.
 */
import { Options } from "@effect/cli"
import { Config, Effect, Either } from "effect"
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { parseDurationMillis, parsePositiveMillis } from "../core/duration.ts"
import type { AnyJobType } from "../runtime/Job.ts"
import { CliError, rootMessage } from "./format.ts"

const databaseUrl = Options.text("database-url").pipe(
  Options.withDescription("postgres://…, mysql://…, or an SQLite file path"),
  Options.withFallbackConfig(Config.string("LEASEHOLD_DATABASE_URL")),
  Options.withDefault("./leasehold.db")
)
const prefix = Options.text("prefix").pipe(Options.withDescription("table prefix"), Options.withDefault("leasehold_"))
const json = Options.boolean("json").pipe(Options.withDescription("print JSON for scripts"))

/** The options every command takes: `--database-url`, `--prefix`, `--json`. */
export const common = { databaseUrl, prefix, json }

/** The values of `common`. */
export type Common = { readonly databaseUrl: string; readonly prefix: string; readonly json: boolean }

/** `--jobs`: the module exporting the app's job types (or `LEASEHOLD_JOBS`). */
export const jobsModule = Options.text("jobs").pipe(
  Options.withDescription("module exporting the app's job types"),
  Options.withFallbackConfig(Config.string("LEASEHOLD_JOBS"))
)

/**
 * The milliseconds of a duration flag, read by the project's one duration parser
 * (src/core/duration.ts) with a bare number meaning seconds ("30", "30s" and "30 seconds" alike).
 * `positive` refuses zero (a poll interval or grace period of nothing). A bad value fails with
 * one line naming the flag.
 */
export const durationFlag = (
  name: string,
  text: string,
  options: { readonly positive?: boolean } = {}
): Effect.Effect<number, CliError> => {
  const read = options.positive === true ? parsePositiveMillis : parseDurationMillis
  return Either.match(read(text, { bareNumber: "seconds" }), {
    // The old wording for an unreadable value (scripts and tests match "not a duration");
    // a readable but refused one (negative, or zero where that means nothing) says why.
    onLeft: (reason) =>
      Effect.fail(
        new CliError({
          message: reason.startsWith("is not a duration")
            ? `--${name}: not a duration: ${JSON.stringify(text)} (try "30 seconds", "7 days")`
            : `--${name}: ${reason.replace(/, got .*$/, "")}: ${JSON.stringify(text)}`
        })
      ),
    onRight: Effect.succeed
  })
}

/** A job module node cannot import by itself (before its own type stripping): TypeScript. */
const TYPESCRIPT = /\.(?:[cm]?ts|tsx)$/i

/** Whether this node strips TypeScript types itself (22.18+ and 23.6+ by default; never on 20). */
const nodeStripsTypes = (): boolean => Boolean((process.features as { readonly typescript?: unknown }).typescript)

/** Whether an import failed because tsx itself is not installed (not some module inside it). */
const isTsxMissing = (e: unknown): boolean =>
  (e as { readonly code?: unknown } | null)?.code === "ERR_MODULE_NOT_FOUND" &&
  /\bpackage ['"]tsx['"]/.test(String((e as { readonly message?: unknown }).message))

let tsxRegistered = false

/**
 * Makes a TypeScript job module importable: registers tsx's ESM hooks (`tsx/esm/api`, tsx being
 * an optional peer dependency), once per process and only now, so no command pays for tsx
 * unless its job module needs it. Without tsx, a node that strips types itself gets to try; any
 * other node fails with one line saying what to do.
 */
const prepareTypeScript = (module: string): Effect.Effect<void, CliError> =>
  tsxRegistered ? Effect.void : Effect.tryPromise({
    try: async () => {
      const tsx = await import("tsx/esm/api")
      tsx.register()
      tsxRegistered = true
    },
    catch: (e) =>
      isTsxMissing(e)
        ? "missing" as const
        : new CliError({ message: `cannot load tsx for the job module ${module}: ${rootMessage(e)}` })
  }).pipe(
    Effect.catchIf((e) => e === "missing", () =>
      nodeStripsTypes()
        ? Effect.void
        : Effect.fail(
          new CliError({
            message: `job module ${module} is TypeScript, which node ${process.version} cannot import by itself: ` +
              "install tsx (npm install --save-dev tsx) or compile the module to JavaScript"
          })
        ))
  )

/**
 * Loads an app's job types from a module: every export that is a job type (or an array of them).
 * A TypeScript module (.ts, .mts, .cts, .tsx) is compiled through tsx, loaded only for it.
 */
export const loadJobs = (module: string): Effect.Effect<ReadonlyArray<AnyJobType>, CliError> =>
  Effect.suspend(() => {
    const jobFile = resolve(module)
    return TYPESCRIPT.test(jobFile)
      ? prepareTypeScript(module).pipe(Effect.as(jobFile))
      : Effect.succeed(jobFile)
  }).pipe(
    Effect.flatMap((jobFile) =>
      Effect.tryPromise({
        try: () => import(pathToFileURL(jobFile).href) as Promise<Record<string, unknown>>,
        catch: (e) => new CliError({ message: `cannot load job module ${module}: ${rootMessage(e)}` })
      })
    ),
    Effect.flatMap((mod) => {
      const isJob = (v: unknown): v is AnyJobType =>
        typeof v === "object" && v !== null && "name" in v && "schema" in v && "perform" in v && "timeoutSeconds" in v
      const found = new Map<string, AnyJobType>()
      for (const value of Object.values(mod)) {
        for (const v of Array.isArray(value) ? value : [value]) if (isJob(v)) found.set(v.name, v)
      }
      return found.size === 0
        ? Effect.fail(
          new CliError({ message: `job module ${module} exports no job types (define them with Job.define)` })
        )
        : Effect.succeed([...found.values()])
    })
  )
