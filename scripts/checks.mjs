/**
 * The checks `npm test` runs before the tests (type check, lint, module boundaries), side by
 * side rather than one after another: each waits on a different thing, and together they took
 * about 17 s in a row. Each check's output is printed whole when it ends; the exit code is
 * non-zero if any of them failed.
 */
import { spawn } from "node:child_process"

const checks = [
  ["type check", "typecheck"],
  ["lint", "lint"],
  ["module boundaries", "check:deps"]
]

const run = ([label, script]) =>
  new Promise((resolve) => {
    const child = spawn("npm", ["run", "--silent", script], { stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    child.stdout.on("data", (chunk) => (output += chunk))
    child.stderr.on("data", (chunk) => (output += chunk))
    child.on("close", (code) => {
      process.stdout.write(`${code === 0 ? "✓" : "✗"} ${label}${output.trim() === "" ? "" : `\n${output.trimEnd()}`}\n`)
      resolve(code === 0)
    })
  })

const results = await Promise.all(checks.map(run))
process.exit(results.every(Boolean) ? 0 : 1)
