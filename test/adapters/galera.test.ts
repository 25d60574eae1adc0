/**
 * Every conformance suite on a three-node MariaDB Galera cluster (scripts/galera/start; .ci/run
 * starts it), each test's statements spread over the three nodes by leasehold's cluster client
 * (src/adapters/mysql/cluster.ts). A cluster that is not up fails every suite here: nothing is
 * skipped.
 */
import { badInputConformance } from "../conformance/badInput/index.ts"
import { enqueueConformance } from "../conformance/enqueue.ts"
import { cancelConformance } from "../conformance/cancel.ts"
import { exclusiveConformance } from "../conformance/exclusive.ts"
import { fencingConformance } from "../conformance/fencing.ts"
import { handBackConformance } from "../conformance/handBack.ts"
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

leaseLockConformance("galera")
jobConformance("galera")
insightsConformance("galera")
enqueueConformance("galera")
exclusiveConformance("galera")
fencingConformance("galera")
workerConformance("galera")
handBackConformance("galera")
cancelConformance("galera")
migrationConformance("galera")
scheduleConformance("galera")
badInputConformance("galera")
observabilityConformance("galera")
historyConformance("galera")
retentionConformance("galera")
tracingConformance("galera")
