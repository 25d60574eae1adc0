/**
 * The bad-input catalogue (issue 6), on every adapter: what each public entry point (enqueue,
 * processNext / processQueue / tick / drain, the long-running worker, LeaseLock, Job.define)
 * does with input that is odd or bad.
 *
 * - Odd text (quotes, `;`, `--`, backslashes, control characters, emoji, combining marks,
 *   right-to-left) is stored and read back verbatim: every case reads the row, payload or lease
 *   back and compares it (./text.ts).
 * - Bad input (over-long, NaN, negative, infinite, fractional, huge, unstorable text such as NUL
 *   or an unpaired surrogate) is refused with the documented typed error, and the tables are
 *   compared before and after to show nothing was written; or it is clamped as documented, and
 *   the edge values that are accepted are stored exactly (./enqueue.ts, ./worker.ts, ./lease.ts).
 *
 * Refusals that happen before any store call (Job.define, and the option checks of enqueue and
 * the worker) do not depend on the adapter: they run once, against a store that fails the test
 * if it is touched at all, in test/unit/. Trailing spaces (refused because MariaDB's PAD SPACE
 * collation ignores them) have their own tests in test/conformance/leaseLock.ts,
 * test/conformance/jobs.ts, test/unit/ and the LeaseLock model test. Time is TestClock's.
 */
import { layer } from "@effect/vitest"
import { type AdapterName, layerFor } from "../../support/databases.ts"
import { enqueueArea } from "./enqueue.ts"
import { leaseArea } from "./lease.ts"
import { textArea } from "./text.ts"
import { workerArea } from "./worker.ts"

/** Runs the whole catalogue on one adapter, in one layer (one table prefix, one migration). */
export const badInputConformance = (adapter: AdapterName) =>
  layer(layerFor(adapter, "bi"), { timeout: 120_000 })(`Odd and bad input conformance on ${adapter}`, (it) => {
    textArea(it, adapter)
    enqueueArea(it, adapter)
    workerArea(it, adapter)
    leaseArea(it, adapter)
  })
