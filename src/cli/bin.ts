#!/usr/bin/env node
/**
 * The `leasehold` command (package.json "bin"): the compiled CLI on plain node, no TypeScript
 * loader. A job module written in TypeScript (`--jobs ./src/jobs.ts`) is compiled through tsx,
 * registered only then (./options.ts).
 */
import module from "node:module" // Node 22.1+ keeps the compiled code of the modules the CLI loads between runs (tsc does the
 // same); Node 20 has no such cache, and the call is skipped.
;(module as { enableCompileCache?: () => unknown }).enableCompileCache?.()

const { run } = await import("./main.ts")
run(process.argv.slice(2))
