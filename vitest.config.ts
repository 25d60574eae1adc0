import { defineConfig } from "vitest/config"

/**
 * The tests that need no database server (no PostgreSQL, MariaDB or Galera cluster, no browser,
 * no network): the pure rules, the unit tests, the in-memory store and SQLite. `npm run test:quick`
 * runs them alone; `npm test` runs them with the rest.
 */
const QUICK = [
  "test/core/**/*.test.ts",
  "test/unit/**/*.test.ts",
  "test/adapters/memory.test.ts",
  "test/adapters/sqlite.test.ts",
  "test/integration/logging.test.ts",
  "test/integration/readme-example.test.ts",
  "test/integration/testing-kit.test.ts",
  "test/integration/tracing.test.ts",
  "test/integration/transfer-counter.test.ts",
  "test/integration/worker-unmigrated.test.ts"
]

export default defineConfig({
  test: {
    reporters: ["default", "./test/support/summary-reporter.ts"],
    // Builds dist/ first: the CLI tests run the compiled CLI.
    globalSetup: ["./test/support/build.ts"],
    // The compiled build is node's to load, not vitest's: the CLI tests import dist/cli/ into
    // their own process (test/support/cli.ts), and the job modules it loads import "leasehold",
    // which node resolves to dist/. Run through vitest's module runner instead, the CLI would be a
    // second copy of the package beside the one those modules get, as it never is when installed.
    server: { deps: { external: [/\/dist\//] } },
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Files run in parallel; each isolates itself with its own table prefix.
    pool: "forks",
    maxWorkers: 2,
    minWorkers: 1,
    projects: [
      // Threads: no server to isolate from, and a worker thread starts faster than a process.
      { extends: true, test: { name: "quick", include: QUICK, pool: "threads" } },
      { extends: true, test: { name: "servers", include: ["test/**/*.test.ts"], exclude: QUICK } }
    ]
  }
})
