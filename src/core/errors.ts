/**
 * Typed errors shared by every room. They are plain tagged data (no services), so core may
 * define them and adapters and runtime may raise them.
 */
import { Data } from "effect"
import { DRIVER_PACKAGES, installCommand } from "./install.ts"

/** A lease name, owner, host or time that the lock table cannot hold; nothing was written. */
export class LeaseInputError extends Data.TaggedError("LeaseInputError")<{
  readonly field: "name" | "owner" | "host" | "expiresAt" | "now" | "expiredBefore"
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
 * A guarded write was refused (docs/behaviour.md §2, "Fencing tokens"): its fencing token is
 * lower than the highest one the resource has seen, so a newer lease holder has written since.
 * Nothing was written: the caller's write did not run.
 */
export class StaleTokenError extends Data.TaggedError("StaleTokenError")<{
  readonly resource: string
  readonly token: bigint
  /** The highest token the resource has seen. */
  readonly highest: bigint
}> {
  override get message() {
    return `stale fencing token ${this.token} for ${this.resource}: it has seen ${this.highest}`
  }
}

/** A fence resource or token that the fences table cannot hold; nothing was written. */
export class FenceInputError extends Data.TaggedError("FenceInputError")<{
  readonly field: "resource" | "token"
  readonly reason: string
}> {
  override get message() {
    return `invalid fence ${this.field}: ${this.reason}`
  }
}

/**
 * The attempt was fenced: its claim was reaped and the job re-claimed by another attempt,
 * so this one must stop. `heartbeat()` fails with it; perform may let it propagate.
 */
export class Fenced extends Data.TaggedError("Fenced")<{
  readonly jobId: string
  /** The job type's name (not `name`, which an Error keeps for its tag). */
  readonly jobName: string
  readonly attempt: number
}> {
  override get message() {
    return `job ${this.jobName} ${this.jobId} attempt ${this.attempt} was fenced: its claim was reaped and re-claimed`
  }
}

/**
 * The attempt's job was cancelled (src/runtime/cancel.ts): `heartbeat()` fails with it, and the
 * attempt should stop. perform may let it propagate; the attempt then ends `cancelled`, its
 * lease released and handed off.
 */
export class JobCancelled extends Data.TaggedError("JobCancelled")<{
  readonly jobId: string
  /** The job type's name (not `name`, which an Error keeps for its tag). */
  readonly jobName: string
  readonly attempt: number
}> {
  override get message() {
    return `job ${this.jobName} ${this.jobId} was cancelled during attempt ${this.attempt}`
  }
}

/** No job has this id (it never existed, or it was purged). */
export class JobNotFoundError extends Data.TaggedError("JobNotFoundError")<{
  readonly jobId: string
}> {
  override get message() {
    return `no job with id ${this.jobId}`
  }
}

/** The job has finished (completed, failed, interrupted or already cancelled): nothing to cancel. */
export class JobNotCancellableError extends Data.TaggedError("JobNotCancellableError")<{
  readonly jobId: string
  readonly status: string
}> {
  override get message() {
    return `job ${this.jobId} is ${this.status}: only a pending or processing job can be cancelled`
  }
}

/** A cancel filter that cannot work (empty, a finished status, a blank name, …); nothing was cancelled. */
export class CancelFilterError extends Data.TaggedError("CancelFilterError")<{
  readonly field: string
  readonly reason: string
}> {
  override get message() {
    return this.field === "filter"
      ? `invalid cancel filter: ${this.reason}`
      : `invalid cancel filter: ${this.field} ${this.reason}`
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
  /** The job type's name (not `name`, which an Error keeps for its tag). */
  readonly jobName: string
}> {
  override get message() {
    return `no job type named ${JSON.stringify(this.jobName)} is registered with this worker`
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
  /** The job type's name (not `name`, which an Error keeps for its tag). */
  readonly jobName: string
  readonly reason: string
}> {
  override get message() {
    return `job type ${JSON.stringify(this.jobName)}: ${this.reason}`
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

/** The command that clears a migration lock left behind by a process that died. */
export const MIGRATE_UNLOCK_COMMAND = "leasehold migrate unlock"

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`

/**
 * The migration lock stayed held by another process for the whole wait. Usually a migration
 * is running elsewhere; if that process is gone, its lease expires by itself, or the unlock
 * command removes it.
 */
export class MigrationLockTimeoutError extends Data.TaggedError("MigrationLockTimeoutError")<{
  readonly table: string
  /** The holder's owner id, or null if the lease turned free just as the wait ended. */
  readonly owner: string | null
  /** The holder's host, as it recorded it. */
  readonly host: string | null
  /** When the holder's lease expires (epoch ms), if one was seen. */
  readonly expiresAt: number | null
  readonly waitedMs: number
  readonly timeoutMs: number
  /** The command that removes a stale lock. */
  readonly unlockCommand: string
}> {
  override get message() {
    const holder = this.owner === null
      ? "another process"
      : `owner ${this.owner} on host ${this.host ?? "(unknown host)"}`
    return `migration lock (${this.table}) still held by ${holder} after waiting ${seconds(this.waitedMs)}. ` +
      `If no migration is running there, run \`${this.unlockCommand}\` once its lease has expired ` +
      `(or \`${this.unlockCommand} --force\` to remove it now).`
  }
}

/**
 * Before a migration step, the migration lock turned out to be no longer ours (its lease
 * expired and another process took it over). The run stops before that step, so two
 * processes never apply migrations at once.
 */
export class MigrationLockLostError extends Data.TaggedError("MigrationLockLostError")<{
  readonly table: string
  /** Our owner id. */
  readonly owner: string
  /** Who holds it now, if anyone. */
  readonly holder: string | null
  readonly holderHost: string | null
  /** The migration that was about to run. */
  readonly migrationId: number
  readonly migrationName: string
}> {
  override get message() {
    return `migration lock (${this.table}) lost before migration ${this.migrationId} (${this.migrationName}): ` +
      `held by ${this.holder === null ? "nobody" : `${this.holder} on host ${this.holderHost ?? "(unknown host)"}`}, ` +
      `not by this run (${this.owner}); stopped without applying it`
  }
}

/**
 * Migrations were asked to run inside a transaction. They are DDL, which commits an open
 * transaction on MySQL, so they refuse instead of silently committing the caller's work.
 */
export class MigrationInTransactionError extends Data.TaggedError("MigrationInTransactionError")<{
  readonly table: string
}> {
  override get message() {
    return `leasehold migrations (${this.table}) cannot run inside a transaction: run them outside it`
  }
}

/** A worker or processNext option that cannot work (a NaN timeout cap, concurrency 0, …). */
export class WorkerConfigError extends Data.TaggedError("WorkerConfigError")<{
  readonly field: string
  readonly reason: string
}> {
  override get message() {
    return `invalid worker option ${this.field}: ${this.reason}`
  }
}

/**
 * The driver packages for a database are not installed: leasehold loads a database's driver only
 * when that database is used, so an app installs just its own (README.md, "Install").
 */
export class DriverNotInstalledError extends Data.TaggedError("DriverNotInstalledError")<{
  readonly database: DatabaseKind
  /** What to install, e.g. `["pg", "@effect/sql-pg"]`. */
  readonly packages: ReadonlyArray<string>
  /** The module that could not be loaded. */
  readonly missing: string
}> {
  override get message() {
    return `the ${this.database} driver is not installed (cannot load ${this.missing}): ` +
      installCommand(DRIVER_PACKAGES[this.database] ?? this.packages)
  }
}

/** The databases leasehold runs on, as its messages name them. */
export type DatabaseKind = "PostgreSQL" | "MySQL/MariaDB" | "SQLite"

/** The layer each database is reached through, and what it takes. */
const LAYER_OF: Record<DatabaseKind, { readonly layer: string; readonly takes: string }> = {
  PostgreSQL: { layer: "Postgres.layer", takes: "a postgres:// or postgresql:// URL" },
  "MySQL/MariaDB": { layer: "Mysql.layer", takes: "a mysql:// or mariadb:// URL" },
  SQLite: { layer: "Sqlite.layer", takes: "a file name (or :memory:)" }
}

/**
 * A database URL given to the layer of another database (`Postgres.layer({ url: "mysql://…" })`,
 * `Sqlite.layer({ filename: "postgres://…" })`): refused before anything connects. `url` has its
 * password masked; `found` is the database it names, or what its scheme is.
 */
export class DatabaseUrlMismatchError extends Data.TaggedError("DatabaseUrlMismatchError")<{
  readonly expected: DatabaseKind
  readonly url: string
  readonly found: string
}> {
  override get message() {
    const wanted = LAYER_OF[this.expected]
    const other = LAYER_OF[this.found as DatabaseKind] as (typeof LAYER_OF)[DatabaseKind] | undefined
    return `${wanted?.layer ?? this.expected} needs ${wanted?.takes ?? `a ${this.expected} URL`}, but ` +
      `${this.url} names ${this.found}${other === undefined ? "" : `: use ${other.layer} for it`}`
  }
}

/**
 * A database URL with a scheme no client handles (`postgress://…`, `redis://…`): refused rather
 * than read as an SQLite file name. `scheme` is what came before `://`.
 */
export class UnsupportedDatabaseUrlError extends Data.TaggedError("UnsupportedDatabaseUrlError")<{
  readonly scheme: string
}> {
  override get message() {
    return `unsupported database URL scheme "${this.scheme}://": use postgres://, postgresql://, mysql://, ` +
      "mariadb://, sqlite:, file:, or a plain file path"
  }
}

/** A filter for dead jobs that cannot work (an unknown status, a negative age, …); nothing was changed. */
export class JobFilterError extends Data.TaggedError("JobFilterError")<{
  readonly field: string
  readonly reason: string
}> {
  override get message() {
    return `invalid job filter ${this.field}: ${this.reason}`
  }
}

/** A limits change that cannot be stored (src/core/limits.ts `limitChangeProblem`); nothing was changed. */
export class LimitInputError extends Data.TaggedError("LimitInputError")<{
  readonly reason: string
}> {
  override get message(): string {
    return `bad limits change: ${this.reason}`
  }
}
