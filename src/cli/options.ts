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

/** Loads an app's job types from a module: every export that is a job type (or an array of them). */
export const loadJobs = (module: string): Effect.Effect<ReadonlyArray<AnyJobType>, CliError> =>
  Effect.tryPromise({
    try: () => import(pathToFileURL(resolve(module)).href) as Promise<Record<string, unknown>>,
    catch: (e) => new CliError({ message: `cannot load job module ${module}: ${rootMessage(e)}` })
  }).pipe(
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
