/** Every conformance suite, run on the memory adapter. */
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

leaseLockConformance("memory")
jobConformance("memory")
insightsConformance("memory")
enqueueConformance("memory")
exclusiveConformance("memory")
fencingConformance("memory")
workerConformance("memory")
handBackConformance("memory")
keyGateConformance("memory")
cancelConformance("memory")
migrationConformance("memory")
scheduleConformance("memory")
badInputConformance("memory")
observabilityConformance("memory")
historyConformance("memory")
retentionConformance("memory")
tracingConformance("memory")
