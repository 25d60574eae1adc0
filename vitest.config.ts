import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
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
    minWorkers: 1
  }
})
