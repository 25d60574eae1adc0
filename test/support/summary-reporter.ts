/**
 * Prints one plain closing line, `tests: N passed, N failed, N skipped`, after vitest's own
 * summary, so a log reader that does not know vitest can still count the run.
 */
import type { Reporter, TestModule } from "vitest/node"

export default class SummaryReporter implements Reporter {
  private line = ""

  onTestRunEnd(modules: ReadonlyArray<TestModule>) {
    let passed = 0
    let failed = 0
    let skipped = 0
    for (const module of modules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state
        if (state === "passed") passed++
        else if (state === "failed") failed++
        else skipped++
      }
    }
    this.line = `tests: ${passed} passed, ${failed} failed, ${skipped} skipped`
  }

  // Printed last, after the default reporter's own summary.
  onFinished() {
    if (this.line !== "") process.stdout.write(`${this.line}\n`)
  }
}
