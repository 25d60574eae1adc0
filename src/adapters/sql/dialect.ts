/**
 * The contract each dialect folder (src/adapters/postgres, mysql, sqlite) fulfils for the shared
 * SQL stores: its syntax, its own statements, the strategies it chooses where databases differ in
 * how something is done, and how it classifies driver errors. Types only: the column lists and
 * new-row builders the dialects share are in ./columns.ts, reading driver error codes in
 * ./driverErrors.ts, and the lease and fence tables' part of the contract in ./leaseDialect.ts.
 */
import type { AttemptOutcome } from "../../core/history.ts"
import type { ClaimInput, NewJob } from "../../core/model.ts"
import type { FenceDialect, LeaseDialect } from "./leaseDialect.ts"
import type { RawSql, SqlList, Statement, Syntax } from "./statement.ts"

/** Everything that differs between databases, one value per dialect file. */
export interface Dialect {
  readonly syntax: Syntax
  /**
   * The database runs in this process (SQLite): a statement waits on no round trip to a server,
   * so nothing is gained by doing other work while it runs (JobStoreApi `remote`).
   */
  readonly inProcess: boolean
  readonly lease: LeaseDialect
  readonly fences: FenceDialect
  readonly jobs: JobDialect
  /** Rows a statement changed, from the driver's `.raw` result. */
  readonly affectedRows: (raw: unknown) => number
  /**
   * Whether a driver error means "rolled back, try again" (a deadlock victim, a serialization
   * failure), so a statement or claim that ran on its own can safely be retried.
   */
  readonly isTransient: (cause: unknown) => boolean
  /**
   * Whether a driver error means the connection was lost or refused: the statement may or may
   * not have run, so only a statement fenced against running twice may be sent again.
   */
  readonly isDisconnect: (cause: unknown) => boolean
  /**
   * How long (ms) a statement rolled back `attempt + 1` times in a row waits before it is sent
   * again (src/adapters/sql/retry.ts `FailureKinds`); none: at once. Set on a Galera cluster only.
   */
  readonly transientBackoff?: ((attempt: number) => number) | undefined
  /**
   * Whether a driver error is a unique-key violation: an insert that met a key another row held
   * when it ran (which may have been freed since).
   */
  readonly isDuplicateKey: (cause: unknown) => boolean
}

/** The quoted tables and the builder a dialect's job statements are written with. */
export interface JobSqlContext {
  readonly sql: (strings: TemplateStringsArray, ...values: ReadonlyArray<unknown>) => Statement
  readonly jobs: RawSql
  readonly hosts: RawSql
  /** The lease table of exclusive jobs and concurrency keys. */
  readonly jobLocks: RawSql
  /** Its fencing-token counters (`<jobLocks>_tokens`). */
  readonly jobLockTokens: RawSql
  /** The claim index, (status, priority DESC, run_at), named after the jobs table. */
  readonly claimIndex: RawSql
}

/** What a claim writes and which rows it may take, for a dialect to wrap in its own form. */
export interface ClaimParts {
  /** `status = 'processing', attempts = attempts + 1, claim_token = …` */
  readonly set: Statement
  /** `status = 'pending' AND run_at <= … [AND queue IN (…)]` */
  readonly due: Statement
  /** With a host cap on SQLite: `AND (running count) < cap`, else empty. */
  readonly capped: Statement
  /** How many rows to claim at most. */
  readonly limit: RawSql
  /** At most one of those rows per `claim_lease` (core's ClaimInput `perKey`): the best. */
  readonly onePerKey: boolean
}

/**
 * Who takes a claimed job's lease (migration 11's `claim_lease`). `inAttempt`: the attempt, after
 * the claim (src/runtime/worker/attempt.ts `takeLease`; SQLite, which has no data-modifying
 * CTE). `inClaim`: `statement` is the claim that also takes, for each claimed attempt, its row's
 * `claim_lease` where that lease is free or expired, as the acquire strategy would, owned by the
 * claim token and expiring at the row's new `stale_at` (PostgreSQL). Each row comes back with
 * `lease_token` and `lease_expires`, both null where its lease was not taken (held, or a second
 * row of the same key in this claim): that attempt takes its lease itself.
 */
export type ClaimLeaseStrategy =
  | { readonly kind: "inAttempt" }
  | {
    readonly kind: "inClaim"
    readonly statement: (c: JobSqlContext, parts: ClaimParts, lease: ClaimLeaseParts) => Statement
  }

/** What a claim that takes leases writes into the lease table besides the rows' own values. */
export interface ClaimLeaseParts {
  /** The claiming host (`lockhost`). */
  readonly host: string
  /** The claim's time (`acquiredat`; a lease that expired strictly before it may be taken over). */
  readonly now: number
}

/**
 * How a dialect claims due rows. Either way, a claimed row ends as src/core/transitions.ts
 * `applyClaim` says.
 */
export type ClaimStrategy =
  /**
   * One `UPDATE … WHERE id IN (pick due rows) RETURNING` picks, claims and returns up to `limit`
   * rows (PostgreSQL, SQLite). `newToken` is an SQL expression making a fresh claim token per row,
   * so a batch claim gives each row its own.
   */
  | {
    readonly kind: "returning"
    readonly statement: (c: JobSqlContext, parts: ClaimParts) => Statement
    readonly newToken: RawSql
    /** Who takes a claimed job's lease: its attempt, or this claim statement. */
    readonly leases: ClaimLeaseStrategy
  }
  /**
   * In one transaction, lock up to `limit` due rows with `pickDue` (skipping rows others hold),
   * then UPDATE them by id (MySQL, which has no UPDATE … RETURNING).
   */
  | {
    readonly kind: "lockThenUpdate"
    readonly pickDue: (c: JobSqlContext, due: Statement, limit: RawSql) => Statement
    /**
     * Where the dialect can (MySQL on one server, not a Galera cluster): the same claim as the
     * body of one transaction sent as one multi-statement query, so a claim is one round trip.
     * `tokens` are the claim tokens of the rows it may take, best row first (the caller's token
     * for that one); `token(c, tokens)` is the SQL for a row's token, given to `claimParts`.
     * The body's last statement returns the claimed rows.
     */
    readonly packed?: {
      readonly token: (c: JobSqlContext, tokens: ReadonlyArray<string>) => Statement
      readonly statement: (
        c: JobSqlContext,
        parts: ClaimParts,
        host: string,
        tokens: ReadonlyArray<string>
      ) => Statement
    }
  }

/** How a claim under a host cap keeps the host within it. */
export type HostCapStrategy =
  /**
   * The claim statement counts the host's running rows itself (`ClaimParts.capped`): the database
   * runs one writer at a time, so counting and claiming cannot interleave (SQLite).
   */
  | { readonly kind: "countInClaim"; readonly statement: (c: JobSqlContext, parts: ClaimParts) => Statement }
  /**
   * Lock the host row while counting and claiming, so two claimers cannot both see room
   * (PostgreSQL, MySQL). `now` is the claim's time, for a lock that writes the row (MySQL).
   */
  | { readonly kind: "lockHostRow"; readonly lockHost: (c: JobSqlContext, host: string, now: number) => Statement }

/** How idle workers hear of new work. */
export type WakeupStrategy =
  /**
   * No signal: workers poll (MySQL, SQLite), and between polls an idle worker sends `probe`, a
   * statement far cheaper than a claim, every `everyMs` of real time: a value it returns that
   * differs from the last one it returned means work may have come (src/ports/JobStore.ts
   * `IdleProbe`; docs/behaviour.md §9).
   */
  | { readonly kind: "poll"; readonly probe: IdleProbeStatement }
  /**
   * LISTEN/NOTIFY (PostgreSQL). `notify` is one notification, as a statement of its own: the
   * store sends it after a write outside any transaction has committed, coalesced
   * (src/adapters/sql/wakeupSignal.ts), or inside the caller's transaction, which delivers it
   * on commit. Inside the caller's transaction an enqueue notifies in its own statement instead, a
   * round trip fewer: `insertNotify` inserts a job and notifies, returning the id only if it
   * inserted; `insertManyNotify` is `insertMany` that also notifies once per queue it inserted
   * into. Their payload is the queue.
   */
  | {
    readonly kind: "notify"
    readonly insertNotify: (c: JobSqlContext, job: NewJob, channel: string) => Statement
    readonly insertManyNotify: (c: JobSqlContext, jobs: ReadonlyArray<NewJob>, channel: string) => Statement
    readonly notify: (channel: string, payload: string) => Statement
  }

/** An idle worker's cheap look for work between polls (see `WakeupStrategy`). */
export interface IdleProbeStatement {
  readonly everyMs: number
  /** One row whose first column is the signal (or no row: nothing to signal). */
  readonly statement: (c: JobSqlContext, input: ClaimInput, due: Statement) => Statement
}

/** How an attempt that holds a lease ends. */
export type FinishStrategy =
  /**
   * The outcome, the lease release and the hand-off, each its own statement (MySQL, SQLite).
   * With `packed` (MySQL/MariaDB off a Galera cluster) the three go as one multi-statement query,
   * one round trip, each still committing on its own and the hand-off run only if the release
   * deleted our row; its last statement returns one row: written, released, woke (counts), as
   * `oneStatement`'s does.
   */
  | {
    readonly kind: "steps"
    readonly packed?: (c: JobSqlContext, f: FinishParts) => Statement
    /**
     * With `packed`: the outcome and a lease passed on (`f.transfer`) with the bump of its name's
     * token counter, as the body of one transaction sent as one multi-statement query; its last
     * statement returns one row: written, released (moved), woke (0), transferred (the token).
     */
    readonly packedTransfer?: (c: JobSqlContext, f: FinishParts) => Statement
  }
  /**
   * One statement (PostgreSQL): writes the outcome (fenced on the claim token), releases the
   * lease (owner-fenced) and, only if it did, hands off to the best waiting job. Returns one
   * row: written, released, woke (counts; the store notifies listeners of a job woken).
   */
  | {
    readonly kind: "oneStatement"
    readonly statement: (c: JobSqlContext, f: FinishParts) => Statement
    /**
     * A stopping worker's hand-back in one statement: releases the leases the tokens own, hands
     * each off and gives the attempts back. Returns one row: handed_back, released, woke (counts).
     */
    readonly handBack: (c: JobSqlContext, h: HandBackParts) => Statement
    /**
     * Several leased attempts completed at once (a worker's fibers finishing together, like plain
     * completions' group commit): the outcomes, the owner-fenced releases and a hand-off for each
     * released lease, in one statement. Returns a row per completed attempt (kind 'done', a = id,
     * b = claim token), per released lease (kind 'released', a = lease, b = owner) and one row
     * (kind 'woke', a = how many jobs were woken).
     */
    readonly completeLeased: (c: JobSqlContext, p: CompleteLeasedParts) => Statement
  }

/** What a dialect file supplies for the jobs and hosts tables: its statements and strategies. */
export interface JobDialect {
  /** Inserts a job; where the database allows, a taken unique key inserts nothing instead of failing. */
  readonly insert: (c: JobSqlContext, job: NewJob) => Statement
  /**
   * Inserts many jobs in one statement; a row whose unique key is taken (also by an earlier row
   * of the same statement) is skipped, never an error. With `updateReports: "rows"` it returns
   * the id of each row it inserted; otherwise the store asks which keys it got.
   */
  readonly insertMany: (c: JobSqlContext, jobs: ReadonlyArray<NewJob>) => Statement
  /**
   * Appended to the read of the jobs holding some unique keys after an insert skipped them, so
   * that it sees the latest committed rows even inside a caller's transaction (MySQL: a locking
   * read; elsewhere each statement reads them already).
   */
  readonly latestRead: RawSql
  readonly claim: ClaimStrategy
  readonly hostCap: HostCapStrategy
  readonly wakeups: WakeupStrategy
  readonly finish: FinishStrategy
  /**
   * What an UPDATE can report: the rows it changed (`RETURNING`: PostgreSQL, SQLite) or only how
   * many (MySQL).
   */
  readonly updateReports: "rows" | "count"
  /**
   * The isolation of claims and job-row writes: the session's own, or READ COMMITTED (MySQL/
   * MariaDB, whose default REPEATABLE READ takes gap locks that let a claim and a completion
   * deadlock; docs/retries.md).
   */
  readonly isolation: "session" | "readCommitted"
  /** Makes the best job waiting on a lease (highest priority, then oldest) due now. */
  readonly handOff: (c: JobSqlContext, leaseName: string, now: number, exceptId: string) => Statement
  /** Inserts a host row or refreshes it. */
  readonly upsertHost: (
    c: JobSqlContext,
    host: string,
    now: number,
    maxConcurrent: number,
    codeVersion: string | null
  ) => Statement
  /** Inserts a host row if it is missing. */
  readonly ensureHost: (c: JobSqlContext, host: string, now: number) => Statement
  /**
   * The row's history (migration 7) with the attempt it holds appended, its number, claim time
   * and host read from the row as it was (`attempts`, `updated_at`, `claimed_by`), keeping the
   * last `MAX_HISTORY` (src/core/history.ts): an expression, which `history = …` goes first in
   * a SET list, since MySQL assigns left to right.
   */
  readonly historyAppended: (c: JobSqlContext, entry: HistoryParts) => Statement
}

/** The attempt record an ending attempt appends, beside what the row itself holds. */
export interface HistoryParts {
  readonly endedAt: number
  readonly outcome: AttemptOutcome
  readonly error: string | null
}

/** The pieces of a one-statement finish. */
export interface FinishParts {
  /** The finishing job: never its own hand-off waiter (a retry keeps its backoff). */
  readonly id: string
  /** The fenced outcome UPDATE, without RETURNING. */
  readonly outcome: Statement
  readonly leaseName: string
  /** The attempt's claim token, which owns the lease. */
  readonly owner: string
  readonly now: number
  /** False: release only, wake no waiter (core's FinishInput `handOff`). */
  readonly handOff: boolean
  /**
   * Before the release: the owner-fenced UPDATE that passes the lease on (core's FinishInput
   * `transferTo`), without RETURNING. When it moved the lease the statement also bumps the name's
   * token counter, returns the new token as `transferred`, and releases nothing; else it releases
   * and hands off (per `handOff`) as without it.
   */
  readonly transfer?: Statement | undefined
}

/**
 * The pieces of a one-statement completion of several leased attempts. The attempts come as
 * three lists in one order (the n-th id, claim token and lease are one attempt's), for the
 * dialect to bind as whole lists: a statement whose text does not grow with the batch stays one
 * prepared statement.
 */
export interface CompleteLeasedParts {
  readonly ids: ReadonlyArray<string>
  readonly tokens: ReadonlyArray<string>
  readonly leases: ReadonlyArray<string>
  /** The fenced completion UPDATE of the processing attempts `which` (a condition) names, RETURNING id, claim_token. */
  readonly done: (which: Statement) => Statement
  /**
   * Hands off each lease named by `names` (a subquery) to its best waiter, never to a job
   * `except` (a subquery of ids) names.
   */
  readonly handOff: (names: Statement, except: Statement) => Statement
}

/** The pieces of a one-statement hand-back. */
export interface HandBackParts {
  /** The claim tokens, which own the attempts' leases. */
  readonly tokens: SqlList
  /** Hands off each lease named by `names` (a subquery) to its best waiter. */
  readonly handOff: (names: Statement) => Statement
  /** The fenced give-back UPDATE of the attempts, without RETURNING. */
  readonly giveBack: Statement
}
