import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    reporters: ["default", "./test/support/summary-reporter.ts"],
    // Builds dist/ first: the CLI tests spawn the compiled CLI.
    globalSetup: ["./test/support/build.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Files run in parallel; each isolates itself with its own table prefix.
    pool: "forks",
    maxWorkers: 2,
    minWorkers: 1
  }
})
