/**
 * What `Job.explain` answers (docs/why-a-job-waits.md): the reason a job is where it is, tagged,
 * with its fields, and the explanation around it. Plain data: ./explain.ts decides the reason,
 * ./explainSentence.ts says it.
 */
import type { JobStatus } from "./jobs.ts"

/** The holder of one lease slot, as read from the lease table. */
export interface SlotHolder {
  /** The slot's own lease name (`key:a`, `key:a#2`, …). */
  readonly name: string
  /** The holding attempt's claim token. */
  readonly owner: string
  readonly host: string | null
  /** Epoch ms; the slot is free once this is past. */
  readonly expiresAt: number
  /** Which slot, 1 for the first. */
  readonly slot: number
}

/**
 * Why a job is where it is, with the fields that say so (times in epoch ms). A `limit` of null:
 * the job's type is not registered in this process (or declares no such limit), so how many
 * slots there are is unknown; only the first was read.
 */
export type ExplainReason =
  /** Pending, its run_at in the future, never run: enqueued with a delay or a run time. */
  | { readonly _tag: "NotDue"; readonly runAt: number }
  /** Pending after a failed attempt, until its backoff ends. */
  | { readonly _tag: "Backoff"; readonly runAt: number; readonly attempt: number; readonly lastError: string | null }
  /**
   * Deferred because every slot of its key (`lease` "key") or of its type's cap ("typeCap") was
   * held; `holder`: the held slot that frees first (null: none is held any more).
   */
  | {
    readonly _tag: "LeaseBusy"
    readonly runAt: number
    readonly lease: "key" | "typeCap"
    readonly leaseName: string
    readonly holder: SlotHolder | null
    readonly held: number
    readonly limit: number | null
  }
  /** Deferred by its rate limit on `key` (the rate name without `rate:`) until a slot frees. */
  | {
    readonly _tag: "RateLimited"
    readonly runAt: number
    readonly rateName: string
    readonly key: string
    readonly used: number
    readonly limit: number | null
    readonly periodMs: number | null
    /** When the first held slot frees (null: none is held any more). */
    readonly nextFreeAt: number | null
  }
  /**
   * Waiting because its type, queue or key is paused (src/core/limits.ts `pausedWaitName`), until
   * the pause is lifted or `runAt`; `what` is the paused `<scope>:<target>` (hashed when long).
   */
  | { readonly _tag: "Paused"; readonly runAt: number; readonly waitName: string; readonly what: string }
  /** Due: the next claim of a worker of its queue takes it. */
  | { readonly _tag: "Due"; readonly dueSince: number; readonly queue: string }
  /** Due, but every worker host seen lately is draining (`hosts`), so none starts it. */
  | {
    readonly _tag: "HostsDraining"
    readonly dueSince: number
    readonly queue: string
    readonly hosts: ReadonlyArray<string>
  }
  /** Claimed (running, or about to start) by `host` since `since`. */
  | {
    readonly _tag: "Running"
    readonly host: string | null
    readonly since: number
    readonly attempt: number
    /** The leases its attempt holds (its key's slot, its type's cap slot, its rate slot). */
    readonly leases: ReadonlyArray<string>
    readonly heartbeatAt: number | null
    /** No sign of life past its deadline: the reaper takes it back. */
    readonly stale: boolean
    /** Its host is draining (it starts nothing new; this attempt runs on). */
    readonly hostDraining: boolean
  }
  | { readonly _tag: "Completed"; readonly at: number; readonly attempt: number }
  /** Dead: its retries used up (status `failed`). */
  | { readonly _tag: "Dead"; readonly at: number; readonly attempts: number; readonly lastError: string | null }
  /** Reaped while running and not retried (its type is not idempotent). */
  | { readonly _tag: "Interrupted"; readonly at: number; readonly lastError: string | null }
  | { readonly _tag: "Cancelled"; readonly at: number }

/** What `Job.explain` answers: the job, the reason, and the sentence every surface prints. */
export interface Explanation {
  readonly id: string
  readonly name: string
  readonly queue: string
  readonly status: JobStatus
  /** Epoch ms the answer is as of. */
  readonly at: number
  /** Whether the job's type is registered in this process (its limits known). */
  readonly registered: boolean
  readonly reason: ExplainReason
  /** One sentence saying `reason`. */
  readonly message: string
}
