/**
 * Every conformance suite, in one list: each adapter's test file runs them all with one call, so a
 * suite added here runs on every adapter and none can be left out of one (as River's
 * riverdrivertest.Exercise runs one driver through every test).
 */
import type { AdapterName } from "../support/databases.ts"
import { badInputConformance } from "./badInput/index.ts"
import { cancelConformance } from "./cancel.ts"
import { enqueueConformance } from "./enqueue.ts"
import { exclusiveConformance } from "./exclusive.ts"
import { explainConformance } from "./explain.ts"
import { fencingConformance } from "./fencing.ts"
import { handBackConformance } from "./handBack.ts"
import { historyConformance } from "./history.ts"
import { insightsConformance } from "./insights.ts"
import { jobConformance } from "./jobs.ts"
import { keyGateConformance } from "./keyGate.ts"
import { leaseLockConformance } from "./leaseLock.ts"
import { limitsConformance } from "./limits.ts"
import { migrationConformance } from "./migrations.ts"
import { observabilityConformance } from "./observability.ts"
import { rateLimitConformance } from "./rateLimit.ts"
import { retentionConformance } from "./retention.ts"
import { scheduleConformance } from "./schedules.ts"
import { tracingConformance } from "./tracing.ts"
import { typeCapConformance } from "./typeCap.ts"
import { workerConformance } from "./worker.ts"

/** The suites by name, in the order they run. */
export const SUITES = {
  leaseLock: leaseLockConformance,
  jobs: jobConformance,
  insights: insightsConformance,
  enqueue: enqueueConformance,
  exclusive: exclusiveConformance,
  fencing: fencingConformance,
  worker: workerConformance,
  handBack: handBackConformance,
  keyGate: keyGateConformance,
  rateLimit: rateLimitConformance,
  typeCap: typeCapConformance,
  limits: limitsConformance,
  cancel: cancelConformance,
  migrations: migrationConformance,
  schedules: scheduleConformance,
  badInput: badInputConformance,
  observability: observabilityConformance,
  history: historyConformance,
  retention: retentionConformance,
  tracing: tracingConformance,
  explain: explainConformance
} as const satisfies Record<string, (adapter: AdapterName) => void>

/** A suite's name. */
export type SuiteName = keyof typeof SUITES

/**
 * Runs every conformance suite on `adapter`, but those in `skip` (each skip must say why in the
 * calling file: a suite skipped is a promise that adapter does not keep).
 */
export const runConformance = (adapter: AdapterName, options: { readonly skip?: ReadonlyArray<SuiteName> } = {}) => {
  for (const [name, suite] of Object.entries(SUITES)) {
    if (!options.skip?.includes(name as SuiteName)) suite(adapter)
  }
}
