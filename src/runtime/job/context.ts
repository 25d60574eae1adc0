/**
 * What a running attempt sees of itself (docs/behaviour.md §6): the `JobContext` the worker
 * provides to perform, the lease the attempt holds, and `heartbeat`, perform's check-in.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Context, Effect, Option } from "effect"
import type { Fenced, JobCancelled } from "../../core/errors.ts"

/** The lease a running attempt holds. */
export interface HeldLease {
  readonly name: string
  /** The attempt's claim token. */
  readonly owner: string
  /** Epoch ms; moves forward with each heartbeat. */
  readonly expiresAt: number
  /**
   * This acquisition's fencing token: strictly greater than every earlier token of this lease
   * name, so a resource that keeps the highest token it has seen can refuse a stale holder's
   * write (`Fences.guard`; docs/behaviour.md §2). A bigint, exact at any size; `String(token)`
   * hands it to an API or JSON.
   */
  readonly fencingToken: bigint
}

/** What perform can see of its own attempt. */
export interface JobContextApi {
  readonly jobId: string
  readonly name: string
  readonly queue: string
  /** 1 for the first run. */
  readonly attempt: number
  readonly claimToken: string
  readonly host: string
  /** The lease this attempt holds (exclusive jobs and concurrency keys), as of now. */
  readonly lease: Effect.Effect<Option.Option<HeldLease>>
  /**
   * Proof of life: keeps the row from being reaped and renews the lease. Fails `Fenced` when
   * the claim was reaped and re-claimed, and `JobCancelled` when the job was cancelled (stop
   * then: the attempt ends `cancelled`).
   */
  readonly heartbeat: Effect.Effect<void, Fenced | JobCancelled | SqlError>
}

/** The running attempt's context, provided to perform by the worker. */
export class JobContext extends Context.Tag("leasehold/JobContext")<JobContext, JobContextApi>() {}

/**
 * Heartbeat from inside perform (the check-in where a cancelled job stops: it fails with
 * `JobCancelled`); outside a worker it does nothing.
 */
export const heartbeat: Effect.Effect<void, Fenced | JobCancelled | SqlError> = Effect.flatMap(
  Effect.serviceOption(JobContext),
  Option.match({ onNone: () => Effect.void, onSome: (ctx) => ctx.heartbeat })
)
