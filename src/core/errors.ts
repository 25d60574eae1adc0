/**
 * Typed errors shared by every room. They are plain tagged data (no services), so core may
 * define them and adapters and runtime may raise them.
 */
import { Data } from "effect"

/** A lease name, owner or host that the lock table cannot hold; nothing was written. */
export class LeaseInputError extends Data.TaggedError("LeaseInputError")<{
  readonly field: "name" | "owner" | "host" | "expiresAt"
  readonly reason: string
}> {
  override get message() {
    return `invalid lease ${this.field}: ${this.reason}`
  }
}

/**
 * A lease table was needed but does not exist, and it cannot be created here because the
 * caller is inside a transaction (DDL would commit it on MySQL). Run `createTable` outside a
 * transaction, or create the table with your migrations.
 */
export class LeaseTableInTransactionError extends Data.TaggedError("LeaseTableInTransactionError")<{
  readonly table: string
  readonly createTable: string
}> {
  override get message() {
    return `lease table ${this.table} does not exist and cannot be created inside a transaction; ` +
      `create it first: ${this.createTable}`
  }
}

/**
 * The attempt was fenced: its claim was reaped and the job re-claimed by another attempt,
 * so this one must stop. `heartbeat()` fails with it; perform may let it propagate.
 */
export class Fenced extends Data.TaggedError("Fenced")<{
  readonly jobId: string
  readonly name: string
  readonly attempt: number
}> {
  override get message() {
    return `job ${this.name} ${this.jobId} attempt ${this.attempt} was fenced: its claim was reaped and re-claimed`
  }
}

/** A payload that its job type's Schema rejects; nothing was written. */
export class PayloadError extends Data.TaggedError("PayloadError")<{
  readonly jobName: string
  readonly reason: string
}> {
  override get message() {
    return `invalid payload for job ${this.jobName}: ${this.reason}`
  }
}

/** An enqueue option out of range (unique key over 255 characters, NaN delay, …); nothing was written. */
export class EnqueueInputError extends Data.TaggedError("EnqueueInputError")<{
  readonly field: string
  readonly reason: string
}> {
  override get message() {
    return `invalid enqueue ${this.field}: ${this.reason}`
  }
}

/** A job row names a type this worker has no definition for. The attempt fails; the worker goes on. */
export class UnknownJobTypeError extends Data.TaggedError("UnknownJobTypeError")<{
  readonly name: string
}> {
  override get message() {
    return `no job type named ${JSON.stringify(this.name)} is registered with this worker`
  }
}

/** perform ran longer than its timeout. Its lease, if any, is left to expire. */
export class JobTimeoutError extends Data.TaggedError("JobTimeoutError")<{
  readonly seconds: number
}> {
  override get message() {
    return `perform timed out after ${this.seconds} s`
  }
}

/** A job type or worker option that cannot work (negative timeout, blank name, …). */
export class JobDefinitionError extends Data.TaggedError("JobDefinitionError")<{
  readonly name: string
  readonly reason: string
}> {
  override get message() {
    return `job type ${JSON.stringify(this.name)}: ${this.reason}`
  }
}

/**
 * A heartbeat found the attempt's lease taken over, and its type asked to be interrupted
 * then (`onLeaseLost: "interrupt"`). The attempt is recorded as failed and retried.
 */
export class LeaseLostError extends Data.TaggedError("LeaseLostError")<{
  readonly leaseName: string
  readonly owner: string
  readonly holder: string | null
}> {
  override get message() {
    return `lease ${this.leaseName} was lost: owned by ${this.holder ?? "nobody"}, not by this attempt (${this.owner})`
  }
}
