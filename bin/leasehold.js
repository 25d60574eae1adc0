#!/usr/bin/env node
// The `leasehold` command: loads the TypeScript sources through tsx and runs the CLI.
import { register } from "tsx/esm/api"

register()
const { run } = await import("../src/cli/main.ts")
run(process.argv.slice(2))
