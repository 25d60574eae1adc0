/**
 * The JobStore port (docs/behaviour.md §1, §4–§9): the job and host tables behind one service,
 * and the lease table of exclusive jobs. Stores only read and write rows: every decision
 * (backoff, staleness, reap outcome, lease rules, transitions) is made in src/core and passed in.
 * Implementations: src/adapters/sql/JobStore.ts (PostgreSQL, MySQL/MariaDB, SQLite) and
 * src/adapters/memory/JobStore.ts (the model the SQL stores must agree with).
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Context, type Effect, type Option, type Scope } from "effect"
import type { ReapDecision } from "../core/jobs.ts"
import type {
  CancelFilter,
  Claim,
  ClaimInput,
  ClaimResult,
  DeadJobFilter,
  ClaimState,
  FinishInput,
  Finished,
  HandedBack,
  HostRow,
  JobCount,
  JobFilter,
  JobRow,
  NewJob,
  QueueDepth
} from "../core/model.ts"
import type { LimitChange, LimitRow, LimitScope } from "../core/limits.ts"
import type { LostLeaseRow } from "../core/lostLeases.ts"
import type { TableNames } from "../core/tables.ts"
import type { LeaseLockApi } from "./LeaseLock.ts"

/**
 * An idle worker's cheap look for work between polls, on a database that sends no wake-up
 * signal (MySQL/MariaDB, SQLite; docs/behaviour.md §9): `read` every `everyMs` of real time; a
 * value that differs from the last one read means work may have come, and the worker claims.
 */
export interface IdleProbe {
  readonly everyMs: number
  readonly read: (input: ClaimInput) => Effect.Effect<string | null, SqlError>
}

/** What inserting one job did: its id, or the id of the job already holding its unique key. */
export interface InsertResult {
  readonly id: string
  readonly duplicate: boolean
}

/**
 * Wake-ups within this process: a store's writes that make a job due ring this process's workers
 * on its tables at once, on every database (src/adapters/localWakeups.ts implements them).
 */
export interface LocalWakeupsApi {
  /** Rings every worker of this process on these tables (a plain call). */
  readonly ring: () => void
  /**
   * Calls `wake` on every ring from now until the scope closes; registered before this returns,
   * so a ring right after it is never missed.
   */
  readonly subscribe: (wake: () => void) => Effect.Effect<void, never, Scope.Scope>
}

/** The job-table operations. Guarded writes return whether a row changed (false = fenced). */
export interface JobStoreApi {
  readonly tables: TableNames
  /** This process's wake-ups on these tables: what a worker listens to, and what rings it. */
  readonly wakeups: LocalWakeupsApi
  /** The idle probe of this database, if it needs one (src/runtime/worker/doorbell.ts sends it). */
  readonly idleProbe: Option.Option<IdleProbe>
  /**
   * Its statements wait on a round trip to a database server (not SQLite, which runs in this
   * process): a long-running worker's runner then starts its next job while a plain attempt's
   * outcome is written (src/runtime/worker/longRunning.ts).
   */
  readonly remote: boolean
  /**
   * Inserts the job, or finds the existing one with the same unique key. A key held by a
   * finished job only until it finished (src/core/transitions.ts `keyFreed`) is freed and taken.
   * Outside a transaction, a job due now rings this process's workers (`wakeups`); on
   * PostgreSQL this process's listener then skips the insert's notification. Inside one, whose
   * rows nobody sees before the commit, nothing rings.
   */
  readonly insert: (job: NewJob) => Effect.Effect<InsertResult, SqlError>
  /**
   * Inserts many jobs, unique keys settled per row as `insert` does (a key taken by an earlier
   * row of the same call is a duplicate of it), in one transaction — the caller's when there is
   * one — with one INSERT per chunk of rows. One result per job, in order.
   */
  readonly insertMany: (jobs: ReadonlyArray<NewJob>) => Effect.Effect<ReadonlyArray<InsertResult>, SqlError>
  /** Claims the first due job it can win (priority DESC, run_at ASC), atomically. */
  readonly claim: (input: ClaimInput) => Effect.Effect<ClaimResult, SqlError>
  /**
   * Claims up to `limit` due jobs at once, best first, each with a claim token of its own, for a
   * long-running worker that starts them soon. Ignores `input.hostCap`: a capped worker claims
   * one job at a time through `claim`.
   */
  readonly claimMany: (input: ClaimInput, limit: number) => Effect.Effect<ReadonlyArray<JobRow>, SqlError>
  /**
   * A claimed job that was not started after all (its worker stopped first): back to pending,
   * due as before, its attempt given back; false when fenced.
   */
  readonly giveBack: (id: string, token: string, now: number) => Effect.Effect<boolean, SqlError>
  /**
   * Attempts a stopping worker will not finish (interrupted, or claimed and never started),
   * handed back at once: every lease their tokens own released, the best waiter on each made due
   * (never one of these jobs), then each job pending again, due as before, its attempt given back
   * (fenced on its token, like `giveBack`). One statement on PostgreSQL (src/runtime/worker/handBack.ts).
   */
  readonly handBack: (claims: ReadonlyArray<Claim>, now: number) => Effect.Effect<HandedBack, SqlError>
  /**
   * Ends an attempt: writes its outcome (completed, back to pending for a retry, or dead),
   * fenced on the claim token, and with `lease` releases that lease (owner-fenced) and hands off
   * to the next job waiting on it. One statement on PostgreSQL. A lost connection is retried a
   * bounded number of times (the fences make a second try harmless).
   */
  readonly finish: (input: FinishInput) => Effect.Effect<Finished, SqlError>
  /** A busy lease: back to pending at `runAt`, attempt given back, waiting on `leaseName`. */
  readonly defer: (
    id: string,
    token: string,
    now: number,
    runAt: number,
    leaseName: string
  ) => Effect.Effect<boolean, SqlError>
  /**
   * Proof of life from a running attempt at `now`: the row is stale only after `staleAt`
   * (src/core/lease.ts `leaseExpiresAt`); false when fenced.
   */
  readonly heartbeat: (id: string, token: string, now: number, staleAt: number) => Effect.Effect<boolean, SqlError>
  /** Processing rows whose deadline passed before `now`, oldest update first (limit rows), for the reaper. */
  readonly stale: (now: number, limit: number) => Effect.Effect<ReadonlyArray<JobRow>, SqlError>
  /**
   * Applies a reap decision, guarded by the attempts value read and by staleness, so two
   * reapers cannot both win. True when this call reaped the row.
   */
  readonly reap: (row: JobRow, decision: ReapDecision, now: number) => Effect.Effect<boolean, SqlError>
  /** Makes the best job waiting on `leaseName` (other than `exceptId`) due now; true when one was woken. */
  readonly handOff: (leaseName: string, now: number, exceptId?: string) => Effect.Effect<boolean, SqlError>
  readonly get: (id: string) => Effect.Effect<Option.Option<JobRow>, SqlError>
  readonly list: (filter: JobFilter) => Effect.Effect<ReadonlyArray<JobRow>, SqlError>
  readonly counts: Effect.Effect<ReadonlyArray<JobCount>, SqlError>
  /** Per queue with any, the pending jobs due at `now` and the earliest `run_at` among them (queue order). */
  readonly queueDepths: (now: number) => Effect.Effect<ReadonlyArray<QueueDepth>, SqlError>
  /**
   * Cancels every unfinished job matching `filter` (src/core/transitions.ts `applyCancel`), in
   * one statement; returns how many. A running attempt learns of it at its next heartbeat.
   */
  readonly cancel: (filter: CancelFilter, now: number) => Effect.Effect<number, SqlError>
  /**
   * Where a claim stands now (ours, cancelled, or lost), for an attempt whose write changed
   * nothing and for a claimed job about to start. Concurrent calls are read together.
   */
  readonly claimState: (claim: Claim) => Effect.Effect<ClaimState, SqlError>
  /** Puts a failed or interrupted job back to pending, due now, with fresh attempts. */
  readonly retryDead: (id: string, now: number) => Effect.Effect<boolean, SqlError>
  /**
   * Puts up to `limit` dead jobs matching `filter` (longest dead first) back to pending, due
   * now, with fresh attempts; how many.
   */
  readonly retryDeadWhere: (filter: DeadJobFilter, now: number, limit: number) => Effect.Effect<number, SqlError>
  /** Deletes up to `limit` dead jobs matching `filter` (longest dead first); how many. */
  readonly discardDeadWhere: (filter: DeadJobFilter, limit: number) => Effect.Effect<number, SqlError>
  /** Deletes finished jobs (completed, failed, interrupted, cancelled) of `status` finished before `before`. */
  /** With `limit`, at most that many, the longest finished first (a retention batch). */
  readonly purge: (
    status: "completed" | "failed" | "interrupted" | "cancelled",
    before: number,
    limit?: number
  ) => Effect.Effect<number, SqlError>
  /** Deletes host rows last seen before `seenBefore` that are not draining at `now`; how many. */
  readonly pruneHosts: (seenBefore: number, now: number) => Effect.Effect<number, SqlError>
  /** Creates or refreshes a host row. */
  readonly touchHost: (
    host: string,
    now: number,
    fields: { readonly maxConcurrent: number; readonly codeVersion: string | null }
  ) => Effect.Effect<void, SqlError>
  readonly getHost: (host: string) => Effect.Effect<Option.Option<HostRow>, SqlError>
  readonly listHosts: Effect.Effect<ReadonlyArray<HostRow>, SqlError>
  /** Marks the host draining until `expiresAt` (null: no expiry). */
  readonly drain: (host: string, now: number, expiresAt: number | null) => Effect.Effect<void, SqlError>
  readonly resume: (host: string, now: number) => Effect.Effect<void, SqlError>
  /** Records a lease a run lost (src/core/lostLeases.ts). */
  readonly recordLostLease: (row: LostLeaseRow) => Effect.Effect<void, SqlError>
  /** The `limit` most recently lost leases, newest first. */
  readonly lostLeases: (limit: number) => Effect.Effect<ReadonlyArray<LostLeaseRow>, SqlError>
  /**
   * Deletes lost-lease records lost before `before` (null: none for age), and all but the
   * newest `keep` (ties at the cut kept); how many.
   */
  readonly pruneLostLeases: (before: number | null, keep: number) => Effect.Effect<number, SqlError>
  /** Every row of the limits table (src/core/limits.ts), by scope and target. */
  readonly limits: Effect.Effect<ReadonlyArray<LimitRow>, SqlError>
  /**
   * Applies a checked `change` to its row at `now` (made when missing) and returns the row. A
   * pause lifted wakes every job it held (due now).
   */
  readonly changeLimit: (change: LimitChange, now: number) => Effect.Effect<LimitRow, SqlError>
  /** Deletes a row, waking the jobs its pause held; whether there was one. */
  readonly clearLimit: (scope: LimitScope, target: string, now: number) => Effect.Effect<boolean, SqlError>
}

/** The JobStore service. */
export class JobStore extends Context.Tag("leasehold/JobStore")<JobStore, JobStoreApi>() {}

/** The LeaseLock on leasehold's job-lock table, for exclusive jobs and concurrency keys. */
export class JobLeases extends Context.Tag("leasehold/JobLeases")<JobLeases, LeaseLockApi>() {}

/**
 * The store's reads and administrative writes (jobs by id or filter, counts, dead jobs, cancel,
 * purge, hosts, lost leases): the part of the API each store implements apart from the paths of
 * enqueue, claim and finish.
 */
export type JobStoreAdminApi = Pick<
  JobStoreApi,
  | "get"
  | "list"
  | "counts"
  | "queueDepths"
  | "claimState"
  | "retryDead"
  | "retryDeadWhere"
  | "discardDeadWhere"
  | "cancel"
  | "purge"
  | "pruneHosts"
  | "touchHost"
  | "getHost"
  | "listHosts"
  | "drain"
  | "resume"
  | "recordLostLease"
  | "lostLeases"
  | "pruneLostLeases"
>
