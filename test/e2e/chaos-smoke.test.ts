/**
 * A 20-second smoke run of the chaos tool (scripts/chaos): SQLite (one file, several worker
 * processes) and PostgreSQL side by side, three worker processes each, with kill -9 + replacement,
 * SIGSTOP past the lease window + SIGCONT, and one worker whose Clock is 8 s ahead — no server
 * restart, so it cannot disturb the other test files. It asserts what the checker found, never
 * how long anything took: the waits inside are bounded, and generous, for a loaded machine.
 *
 * Isolation: a fresh table prefix per database and a fresh SQLite file in a temporary directory;
 * tables and files are removed afterwards, and every worker process is killed.
 *
 * Pauses are "long" (beyond the lease window, the skew and two reaper intervals): a paused attempt
 * resumes only after a live worker has reaped it, so it comes back fenced. A pause that ends
 * sooner can resume an attempt that times out after its lease was taken over, which leasehold
 * reports as a plain failure (see the full run, `npm run chaos`).
 */
import { writeFileSync } from "node:fs"
import { afterAll, describe, expect, it } from "vitest"
import { type ChaosReport, killAllChildren, runChaos } from "../../scripts/chaos/chaos.ts"

afterAll(() => killAllChildren())

describe("chaos smoke run", () => {
  it("kills, pauses and a skewed clock leave no unreported overlap, no lost or over-run job", async () => {
    const lines: Array<string> = []
    let report: ChaosReport | undefined
    try {
      report = await runChaos({
        dbs: ["sqlite", "pg"],
        seconds: 20,
        workers: 3,
        restart: false,
        pauses: "long",
        rate: 4,
        seed: 7,
        keep: false,
        keepOnFailure: false,
        log: (line) => void lines.push(line)
      })
    } finally {
      killAllChildren()
    }
    // CHAOS_SMOKE_SUMMARY=<file> keeps the summary (for a report); nothing is written otherwise.
    if (process.env.CHAOS_SMOKE_SUMMARY) {
      writeFileSync(process.env.CHAOS_SMOKE_SUMMARY, `${JSON.stringify(report, null, 2)}\n`)
    }
    const context = `${JSON.stringify(report, null, 2)}\n--- progress ---\n${lines.join("\n")}`
    for (const db of ["sqlite", "pg"] as const) {
      const r = report.databases[db]
      expect(r, context).toBeDefined()
      if (r === undefined) continue
      expect(r.error, context).toBeUndefined()
      expect(r.overlaps.unreported, context).toBe(0)
      expect(r.fencing.staleWritesApplied, context).toBe(0)
      expect(r.lost.count, context).toBe(0)
      expect(r.overRun.count, context).toBe(0)
      // Every job finished: completed, dead or interrupted; none pending or processing.
      expect(r.drained, context).toBe(true)
      expect(r.jobs.enqueueUnconfirmed, context).toBe(0)
      expect(r.jobs.enqueued, context).toBeGreaterThan(0)
      expect(r.jobs.pending + r.jobs.processing, context).toBe(0)
      expect(r.jobs.completed + r.jobs.failed + r.jobs.interrupted, context).toBe(r.jobs.enqueued)
      // The faults happened, and the skewed worker's Clock was off by what it was told.
      expect(r.faults.kills, context).toBeGreaterThanOrEqual(1)
      expect(r.faults.pauses, context).toBeGreaterThanOrEqual(1)
      if (r.skew?.observedMs != null) {
        expect(Math.abs(r.skew.observedMs - r.skew.configuredMs), context).toBeLessThan(1000)
      }
      expect(r.ok, context).toBe(true)
      // Cleaned up: nothing kept.
      expect(r.logs, context).toBeNull()
    }
  }, 600_000)
})
