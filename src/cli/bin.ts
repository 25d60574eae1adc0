#!/usr/bin/env node
/**
 * The `leasehold` command (package.json "bin"): the compiled CLI on plain node, no TypeScript
 * loader. A job module written in TypeScript (`--jobs ./src/jobs.ts`) is compiled through tsx,
 * registered only then (./jobModule.ts).
 *
 * `leasehold [command…] --help` (or `-h`) prints that command's page from ./helpPages.ts
 * (./fastHelp.ts) without loading @effect/cli and effect, whose modules take most of the time a
 * help page would take. The pages are the live CLI's own output, written by
 * scripts/help-pages.mjs (`npm run build`); the CLI tests (test/support/cli.ts) fail when one
 * differs from what the live CLI prints. Anything else runs the CLI (./main.ts).
 *
 * The command's own packages (@effect/cli, @effect/platform-node, …) are optional peer
 * dependencies: an app installs them only to use the command (src/core/install.ts). Without them,
 * the command says which to install, in one line, and exits with status 1.
 */
import module from "node:module"
import { CLI_PACKAGES, installCommand, packageName } from "../core/install.ts"
import { fastHelp } from "./fastHelp.ts" // Node 22.1+ keeps the compiled code of the modules the CLI loads between runs (tsc does the
 // same); Node 20 has no such cache, and the call is skipped.
;(module as { enableCompileCache?: () => unknown }).enableCompileCache?.()

const argv = process.argv.slice(2)
const text = await fastHelp(argv, process.stdout, process.env)

if (text !== undefined) {
  process.stdout.write(text)
} else {
  const main = await import("./main.ts").catch((e: unknown) => {
    const error = e as { readonly code?: unknown; readonly message?: unknown } | null
    const missing = /Cannot find (?:package|module) '([^']+)'/.exec(String(error?.message))?.[1]
    const isOurs = CLI_PACKAGES.some((spec) =>
      missing === packageName(spec) || missing?.startsWith(`${packageName(spec)}/`)
    )
    if (error?.code !== "ERR_MODULE_NOT_FOUND" || !isOurs) throw e
    process.stderr.write(
      `leasehold: the command line's packages are not installed (cannot load ${missing}): ` +
        `${installCommand(CLI_PACKAGES, true)}\n`
    )
    process.exit(1)
  })
  main.run(argv)
}
