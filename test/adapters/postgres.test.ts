/** Every conformance suite, run on the postgres adapter. */
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

leaseLockConformance("postgres")
jobConformance("postgres")
insightsConformance("postgres")
enqueueConformance("postgres")
exclusiveConformance("postgres")
fencingConformance("postgres")
workerConformance("postgres")
handBackConformance("postgres")
keyGateConformance("postgres")
cancelConformance("postgres")
migrationConformance("postgres")
scheduleConformance("postgres")
badInputConformance("postgres")
observabilityConformance("postgres")
historyConformance("postgres")
retentionConformance("postgres")
tracingConformance("postgres")
