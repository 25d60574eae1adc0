/**
 * Job types, the registry that maps names to them, the context a running attempt sees, and
 * enqueue (docs/behaviour.md §4, §7).
 *
 * This module is the public face; the parts live in ./job/: define.ts (job types and their
 * checks), registry.ts (`Jobs`, `jobsLayer`), context.ts (`JobContext`, `heartbeat`),
 * prepare.ts (enqueue's checks), enqueue.ts (`enqueue`, `enqueueMany`) and host.ts.
 */

/** Job types: what an app declares, and `define`, which checks it once. */
export {
  type AnyJobType,
  define,
  type JobDefinition,
  type JobOptions,
  type JobSchedule,
  type JobType
} from "./job/define.ts"
/** The registry of job types a worker can run. */
export { Jobs, type JobsApi, jobsLayer, type RegisteredJob } from "./job/registry.ts"
/** What a running attempt sees: its context, its lease, and the heartbeat. */
export { heartbeat, type HeldLease, JobContext, type JobContextApi } from "./job/context.ts"
/** Options of one enqueue (checked in ./job/prepare.ts). */
export type { EnqueueOptions } from "./job/prepare.ts"
/** Enqueue: one job or many, and what each did. */
export {
  enqueue,
  type EnqueueDuplicate,
  enqueueMany,
  type EnqueueManyOptions,
  type EnqueueManyResult,
  type EnqueueResult
} from "./job/enqueue.ts"
/** The default host name of a worker. */
export { defaultHost } from "./job/host.ts"

/** Dead jobs by filter: retry or discard every match, in bounded batches (./deadJobs.ts). */
export { type DeadJobsFilter, discardDead, retryDead } from "./deadJobs.ts"
/** Cancelling jobs: one by id, or by type, queue or status (./cancel.ts). */
export { cancel, type CancelResult, cancelWhere, type CancelWhere } from "./cancel.ts"
/** Why a job is not running (or what it is doing, or how it ended), in one sentence (./explain.ts). */
export { explain } from "./explain.ts"
/** What `explain` answers: the reason, tagged, with its fields, and its sentence (../core/explainReason.ts). */
export type { ExplainReason, Explanation, SlotHolder } from "../core/explainReason.ts"
