/**
 * Loading the app's job types from the module `--jobs` names (or `LEASEHOLD_JOBS`): every export
 * that is a job type, or an array of them. A TypeScript module (.ts, .mts, .cts, .tsx) is
 * compiled through tsx, registered only then. Anything that goes wrong, the module throwing as
 * it is imported included, is one line naming the module. Loaded only by the commands that need
 * job types (`worker`, `enqueue`).
 */
import * as Effect from "effect/Effect"
import { existsSync } from "node:fs"
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { installCommand, TSX_PACKAGE } from "../core/install.ts"
import type { AnyJobType } from "../runtime/Job.ts"
import { CliError, rootMessage } from "./format.ts"

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
              `install tsx (${installCommand([TSX_PACKAGE], true)}) or compile the module to JavaScript`
          })
        ))
  )

const isJob = (v: unknown): v is AnyJobType =>
  typeof v === "object" && v !== null && "name" in v && "schema" in v && "perform" in v && "timeoutSeconds" in v

/** Loads an app's job types from a module (see the module comment). */
export const loadJobs = (module: string): Effect.Effect<ReadonlyArray<AnyJobType>, CliError> =>
  Effect.suspend(() => {
    const jobFile = resolve(module)
    if (!existsSync(jobFile)) {
      return Effect.fail(new CliError({ message: `job module ${module} not found (looked for ${jobFile})` }))
    }
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
