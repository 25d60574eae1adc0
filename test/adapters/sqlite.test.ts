/** Every conformance suite, run on the sqlite adapter. */
import { badInputConformance } from "../conformance/badInput/index.ts"
import { enqueueConformance } from "../conformance/enqueue.ts"
import { cancelConformance } from "../conformance/cancel.ts"
import { exclusiveConformance } from "../conformance/exclusive.ts"
import { fencingConformance } from "../conformance/fencing.ts"
import { handBackConformance } from "../conformance/handBack.ts"
import { keyGateConformance } from "../conformance/keyGate.ts"
import { insightsConformance } from "../conformance/insights.ts"
import { historyConformance } from "../conformance/history.ts"
import { jobConformance } from "../conformance/jobs.ts"
import { leaseLockConformance } from "../conformance/leaseLock.ts"
import { migrationConformance } from "../conformance/migrations.ts"
import { observabilityConformance } from "../conformance/observability.ts"
import { retentionConformance } from "../conformance/retention.ts"
import { scheduleConformance } from "../conformance/schedules.ts"
import { tracingConformance } from "../conformance/tracing.ts"
import { workerConformance } from "../conformance/worker.ts"

leaseLockConformance("sqlite")
jobConformance("sqlite")
insightsConformance("sqlite")
enqueueConformance("sqlite")
exclusiveConformance("sqlite")
fencingConformance("sqlite")
workerConformance("sqlite")
handBackConformance("sqlite")
keyGateConformance("sqlite")
cancelConformance("sqlite")
migrationConformance("sqlite")
scheduleConformance("sqlite")
badInputConformance("sqlite")
observabilityConformance("sqlite")
historyConformance("sqlite")
retentionConformance("sqlite")
tracingConformance("sqlite")
