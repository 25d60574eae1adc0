/**
 * Vitest's global setup: builds dist/ (`tsc -b tsconfig.build.json`, the same as `npm run build`)
 * before any test file runs, and again before each rerun in watch mode, so the CLI tests
 * (test/support/cli.ts), which run the compiled CLI, never run a stale build. Build mode skips
 * the compiler when no input is newer than dist/.tsbuildinfo (0.3 s here); after an edit it
 * compiles incrementally. Type errors do not stop the tests (tsc still emits, and vitest never
 * type-checks: `tsc --noEmit` in `npm test` does); they are printed as a warning.
 */
import { execFile } from "node:child_process"
import { existsSync } from "node:fs"
import { createRequire } from "node:module"
import { join } from "node:path"
import type { TestProject } from "vitest/node"

const ROOT = join(import.meta.dirname, "..", "..")
const TSC = createRequire(import.meta.url).resolve("typescript/bin/tsc")
const MAIN = join(ROOT, "dist", "cli", "main.js")

const build = () =>
  new Promise<void>((resolve, reject) => {
    const started = performance.now()
    execFile(
      process.execPath,
      [TSC, "-b", "tsconfig.build.json"],
      { cwd: ROOT, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const took = `${((performance.now() - started) / 1000).toFixed(1)} s`
        if (error === null) {
          console.log(`dist/ built (tsc -b tsconfig.build.json, ${took})`)
          return resolve()
        }
        const output = `${stdout}${stderr}`.trim()
        if (!existsSync(MAIN)) return reject(new Error(`tsc -b tsconfig.build.json failed:\n${output}`))
        const lines = output.split("\n")
        console.warn(
          `dist/ built with type errors (tsc -b tsconfig.build.json, ${took}); the CLI tests run what it emitted:\n` +
            lines.slice(0, 20).join("\n") + (lines.length > 20 ? `\n… ${lines.length - 20} more lines` : "")
        )
        resolve()
      }
    )
  })

export default async function setup(project: TestProject) {
  await build()
  project.onTestsRerun(build)
}
