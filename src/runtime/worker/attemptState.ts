/**
 * What the parts of one attempt share (./attempt.ts): the attempt's own state, read once when it
 * starts, and the shape of a part that runs inline in the attempt's `Effect.gen`.
 */
import type { Clock, Effect } from "effect"
import type { YieldWrap } from "effect/Utils"
import type { JobRow } from "../../core/model.ts"
import type { JobLeases, JobStoreApi } from "../../ports/JobStore.ts"
import type { HeldLease } from "../Job.ts"
import type { KeyGate } from "./keyGate.ts"
import type { Resolved } from "./options.ts"

/** One attempt's state, made once by `runClaimed` (./attempt.ts) and read by each of its parts. */
export interface Attempt {
  /** The claimed row. */
  readonly job: JobRow
  /** Its claim token. */
  readonly token: string
  /**
   * The lease its claim took for it (PostgreSQL; src/adapters/sql/dialect.ts `ClaimLeaseStrategy`):
   * held from the claim on, so every way out before perform gives it back, quietly (an attempt
   * that never ran overlapped nothing, whoever holds the lease now).
   */
  readonly claimed: HeldLease | undefined
  /** The worker's checked options. */
  readonly o: Resolved
  /** This worker's keys (./keyGate.ts), if it keeps them. */
  readonly gate: KeyGate | undefined
  readonly store: JobStoreApi
  readonly leases: JobLeases["Type"]
  /** The attempt's Clock, read in place (a plain call, not an effect's step). */
  readonly clock: Clock.Clock
  /** Whether a tracer is installed: the attempt's span is annotated only then. */
  readonly tracing: boolean
}

/**
 * A part of an attempt written as a plain generator: the attempt's `Effect.gen` runs it with
 * `yield*`, so splitting the attempt into parts adds no step of the Effect runtime to any job's path.
 */
export type Steps<A, E = never, R = never> = Generator<YieldWrap<Effect.Effect<any, E, R>>, A, any>
