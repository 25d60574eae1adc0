/**
 * The SQL JobStore (the port in src/ports/JobStore.ts) on PostgreSQL, MySQL/MariaDB and
 * SQLite. It runs the dialect folder's statements; every decision is made in src/core.
 */
import * as LocalWakeups from "../localWakeups.ts"
import { SqlClient } from "@effect/sql"
import { randomUUID } from "node:crypto"
import type { SqlError } from "@effect/sql/SqlError"
import { Array as Arr, Effect, Either, Layer, Option } from "effect"
import { isStale, type JobStatus } from "../../core/jobs.ts"
import { decodeEpochMs, decodeToken } from "../../core/lease.ts"
import type {
  Claim,
  ClaimState,
  ClaimInput,
  ClaimResult,
  FinishInput,
  Finished,
  HandedBack,
  JobRow,
  LeaseTransfer,
  NewJob
} from "../../core/model.ts"
import { tableNames, tokensTable } from "../../core/tables.ts"
import {
  applyClaim,
  claimOrder,
  claimStateOf,
  finishHandsOff,
  keyFreed,
  onePerKey,
  showsOutcome
} from "../../core/transitions.ts"
import { type InsertResult, JobLeases, JobStore, type JobStoreApi } from "../../ports/JobStore.ts"
import { rememberingTable } from "../jobLeases.ts"
import { hintingMissingSchema } from "../schemaErrors.ts"
import { makeBatcher } from "./batching.ts"
import { enqueueConnections } from "../../core/connections.ts"
import { poolSizeOf } from "./connections.ts"
import { makeEnqueueLane } from "./enqueueLane.ts"
import { makeWakeupSignal } from "./wakeupSignal.ts"
import type { ClaimParts } from "./dialect.ts"
import {
  decodeClaimedRow,
  decodeHostRow,
  decodeJobRow,
  decodeLeaseRow,
  decodeLostLeaseRow,
  decodeUniqueUntil,
  int
} from "./decode.ts"
import { directOf } from "./direct.ts"
import { dialectOf } from "./dialects.ts"
import { jobStatements } from "./jobStatements.ts"
import * as ScheduleStoreAdapter from "./ScheduleStore.ts"
import type { ScheduleStore } from "../../ports/ScheduleStore.ts"
import * as LeaseLock from "./LeaseLock.ts"
import { leaseStatements } from "./leaseStatements.ts"
import { causeOf, retryReconnecting, retryTransient } from "./retry.ts"
import { SqlList, type Statement } from "./statement.ts"
import { isGaleraCluster } from "../mysql/galera.ts"
import {
  inTransaction,
  inTransactionWith,
  lastRows,
  NEXT_READ_COMMITTED,
  packedTransaction,
  readCommittedTransaction
} from "./transaction.ts"

/**
 * Rows per INSERT of `insertMany`: 15 parameters each, so a chunk stays far below every
 * database's limit on bound parameters (SQLite 32,766; PostgreSQL and MySQL 65,535).
 */
export const INSERT_CHUNK_ROWS = 1_000
/**
 * Most enqueues of one statement when several wait for the lane (./enqueueLane.ts): enough that a
 * burst costs few statements, few enough that each stays short beside the worker's.
 */
export const ENQUEUES_TOGETHER = 100
/**
 * Most payload bytes of one such statement: far below the smallest packet a server takes by
 * default (MySQL 5.7's `max_allowed_packet`, 4 MiB), whatever the jobs' sizes.
 */
export const ENQUEUE_BYTES_TOGETHER = 1_048_576
/** Rounds of insert and settle before a key that is neither inserted nor held is a defect. */
const INSERT_ROUNDS = 4

/** What an INSERT wrote: the ids of its rows, and (single MySQL insert) the error it raised. */
interface Inserted {
  readonly ids: ReadonlySet<string>
  readonly error?: SqlError
}

/**
 * Builds the SQL JobStore over the current `SqlClient` for one table prefix. The dialect is
 * resolved here, once; statements run without the app's name transforms, and inside the
 * caller's transaction when there is one (so an enqueue joins it).
 */
export const make = (
  options: { readonly prefix?: string | undefined } = {}
): Effect.Effect<JobStoreApi, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const client = yield* SqlClient.SqlClient
    const sql = client.withoutTransforms()
    const dialect = dialectOf(sql)
    const tables = tableNames(options.prefix)
    const s = jobStatements(dialect, tables)
    const d = dialect.jobs
    // Straight to the pool where the client offers it (./direct.ts), else through @effect/sql.
    const direct = directOf(client)

    const rows = (st: Statement): Effect.Effect<ReadonlyArray<Record<string, unknown>>, SqlError> => {
      const params = st.params as Array<unknown>
      return direct(st.sql, params, false, () => sql.unsafe<Record<string, unknown>>(st.sql, params).withoutTransform)
    }
    const changed = (st: Statement) => {
      const params = st.params as Array<unknown>
      return Effect.map(direct(st.sql, params, true, () => sql.unsafe(st.sql, params).raw), dialect.affectedRows)
    }
    const first = <A>(st: Statement, decode: (r: Record<string, unknown>) => A) =>
      Effect.map(rows(st), (r) => Option.map(Option.fromNullable(r[0]), decode))
    const jobs = (st: Statement) => Effect.map(rows(st), (r) => r.map(decodeJobRow))

    // MySQL/MariaDB: claims and job-row writes run at READ COMMITTED, which takes no gap locks,
    // so a claim and a completion cannot deadlock on each other's index gaps (docs/retries.md).
    // A write on its own is one round trip: the SET applies to the statement's own transaction.
    const readCommitted = d.isolation === "readCommitted"
    const write = (st: Statement): Effect.Effect<number, SqlError> =>
      readCommitted
        ? inTransactionWith((inside) =>
          inside
            ? changed(st)
            : Effect.map(
              sql.unsafe(`${NEXT_READ_COMMITTED}; ${st.sql}`, st.params as Array<unknown>).unprepared,
              (results) => dialect.affectedRows(results[results.length - 1])
            )
        )
        : changed(st)
    const transaction = <A, E>(effect: Effect.Effect<A, E>) =>
      readCommitted ? readCommittedTransaction(sql, effect) : sql.withTransaction(effect)

    // Wake idle workers of other processes (PostgreSQL): a notification after a write outside
    // any transaction, coalesced; inside the caller's transaction, in it (./wakeupSignal.ts).
    const wakeups = d.wakeups
    const signal = wakeups.kind === "notify"
      ? makeWakeupSignal((payload) => rows(wakeups.notify(tables.channel, payload)))
      : undefined
    const notifyWoken = (inside: boolean): Effect.Effect<void, SqlError> =>
      signal === undefined ? Effect.void : inside ? signal.inTransaction : signal.afterCommit

    // The ids a single insert wrote: its own, or none when the unique key is taken (on MySQL a
    // duplicate-key error, kept to raise should no job hold the key). Inside the caller's
    // transaction PostgreSQL notifies in the same statement.
    const insertOne = ([job]: ReadonlyArray<NewJob>): Effect.Effect<Inserted, SqlError> =>
      // As few steps as it takes: an enqueue is on the path of every job's latency.
      Effect.match(
        inTransactionWith((inside) =>
          wakeups.kind === "notify" && inside
            ? Effect.map(rows(wakeups.insertNotify(s.context, job!, tables.channel)), (r) => r.length)
            : changed(s.insert(job!))
        ),
        {
          onFailure: (error): Inserted => ({ ids: new Set(), error }),
          onSuccess: (n): Inserted => ({ ids: new Set(n > 0 ? [job!.id] : []) })
        }
      )
    // The ids a multi-row insert wrote; where the database cannot tell (MySQL), only the rows
    // without a key of the caller's (their key is their own fresh id, which nothing else holds).
    // `notifying`: inside the caller's transaction (PostgreSQL), the insert notifies.
    const insertRowsWith = (notifying: boolean) => (many: ReadonlyArray<NewJob>): Effect.Effect<Inserted, SqlError> => {
      const ids = (r: ReadonlyArray<{ readonly id?: unknown }>): Inserted => ({
        ids: new Set(r.map((x) => String(x.id)))
      })
      return wakeups.kind === "notify" && notifying
        ? Effect.map(rows(wakeups.insertManyNotify(s.context, many, tables.channel)), ids)
        : d.updateReports === "rows"
        ? Effect.map(rows(s.insertMany(many)), ids)
        : Effect.as(write(s.insertMany(many)), ids(many.filter((j) => j.uniqueKey === j.id)))
    }
    const insertJob = (job: NewJob) =>
      retryTransient(dialect, "enqueue", Effect.map(insertSettled([job], insertOne), (r) => r[0]!))
    // Enqueues outside a transaction: at most their share of the pool's connections, those that
    // wait going together (./enqueueLane.ts, src/core/connections.ts).
    const lane = makeEnqueueLane({
      places: enqueueConnections(yield* poolSizeOf(client, dialect)),
      maxTogether: ENQUEUES_TOGETHER,
      maxBytes: ENQUEUE_BYTES_TOGETHER,
      freeOnNextTurn: dialect.inProcess,
      one: insertJob,
      together: (many) => retryTransient(dialect, "enqueue", insertSettled(many, insertRowsWith(false))),
      // The server answered with an error of its own (a code) that is neither a lost connection
      // nor a deadlock: one row it would not take.
      refused: (error) => {
        const cause = causeOf(error)
        const code = (cause as { readonly code?: unknown } | null | undefined)?.code
        return typeof code === "string" && !dialect.isDisconnect(cause) && !dialect.isTransient(cause)
      }
    })
    // Whether an insert wrote a job due now, so that idle workers elsewhere are worth waking.
    const wroteDue = (many: ReadonlyArray<NewJob>, results: ReadonlyArray<InsertResult>) =>
      results.some((r, i) => !r.duplicate && many[i]!.runAt <= many[i]!.now)

    /**
     * Inserts `many` with `insertWith`, then settles the rows it did not write: a key held by the row
     * itself was written after all; a key held by another job is a duplicate of it; a key freed by
     * a finished job (core's keyFreed) is freed and the row inserted again, as is one whose holder
     * was purged meanwhile. A few rounds settle every race (each round, someone inserted).
     */
    const insertSettled = (
      many: ReadonlyArray<NewJob>,
      insertWith: (many: ReadonlyArray<NewJob>) => Effect.Effect<Inserted, SqlError>
    ): Effect.Effect<ReadonlyArray<InsertResult>, SqlError> =>
      // Every row written at the first try, as nearly always: settled without the rounds' steps.
      Effect.flatMap(insertWith(many), (first) =>
        many.every((j) => first.ids.has(j.id))
          ? Effect.succeed(many.map((j): InsertResult => ({ id: j.id, duplicate: false })))
          : settleRounds(many, insertWith, first))

    /** `insertSettled`'s rounds, the first of which (`first`) has been sent. */
    const settleRounds = (
      many: ReadonlyArray<NewJob>,
      insertWith: (many: ReadonlyArray<NewJob>) => Effect.Effect<Inserted, SqlError>,
      first: Inserted
    ): Effect.Effect<ReadonlyArray<InsertResult>, SqlError> =>
      Effect.gen(function*() {
        const settled = new Map<string, InsertResult>()
        let todo = many
        for (let round = 0; todo.length > 0; round++) {
          if (round === INSERT_ROUNDS) {
            return yield* Effect.dieMessage(
              `enqueue: unique key ${todo[0]!.uniqueKey} neither inserted nor held after ${INSERT_ROUNDS} tries`
            )
          }
          const inserted = round === 0 ? first : yield* insertWith(todo)
          const unsure = todo.filter((j) => !inserted.ids.has(j.id))
          for (const j of todo) if (inserted.ids.has(j.id)) settled.set(j.id, { id: j.id, duplicate: false })
          if (unsure.length === 0) break
          const holders = new Map(
            (yield* rows(s.keyHolders([...new Set(unsure.map((j) => j.uniqueKey))]))).map((r) => [
              String(r.unique_key),
              { id: String(r.id), status: String(r.status), uniqueUntil: decodeUniqueUntil(r.unique_until_finished) }
            ])
          )
          const again: Array<NewJob> = []
          const freed = new Set<string>()
          for (const j of unsure) {
            const holder = holders.get(j.uniqueKey)
            if (holder?.id === j.id) settled.set(j.id, { id: j.id, duplicate: false })
            else if (holder === undefined) again.push(j)
            else if (keyFreed(holder)) {
              freed.add(holder.id)
              again.push(j)
            } else settled.set(j.id, { id: holder.id, duplicate: true })
          }
          // Nothing holds the key, yet the insert wrote nothing: its error is the real failure,
          // unless it was a duplicate key: then a holder existed when it ran and another enqueue
          // has freed the key since, its own insert still to come; the next round settles it.
          if (
            inserted.error !== undefined && again.length > 0 && freed.size === 0 &&
            !dialect.isDuplicateKey(causeOf(inserted.error))
          ) {
            return yield* Effect.fail(inserted.error)
          }
          if (freed.size > 0) yield* write(s.freeKeys([...freed]))
          todo = again
        }
        return many.map((j) => settled.get(j.id)!)
      })

    // Whether the job lease table and its token counters exist: `leaseTablesKnown` once both have
    // been seen, else asked of the catalog (`lookUpLeaseTables`) by each claim until they are.
    // Migrations create them; an app that never ran them gets them from its first exclusive
    // attempt (src/adapters/jobLeases.ts), and until then claims take no lease.
    let leaseTablesKnown = false
    const lookUpLeaseTables: Effect.Effect<boolean, SqlError> = Effect.map(
      Effect.all([tables.jobLocks, tokensTable(tables.jobLocks)].map((t) => rows(dialect.lease.tableExists(t)))),
      (found) => (leaseTablesKnown = found.every((r) => r.length > 0))
    )

    const countRunning = (host: string) => Effect.map(rows(s.countRunning(host)), (r) => int(r[0]?.n ?? 0))

    // A claim in one round trip where the dialect packs it; a Galera cluster claims in steps, as it finishes.
    const packedClaim = d.claim.kind === "lockThenUpdate" && !isGaleraCluster(sql) ? d.claim.packed : undefined
    // Up to `limit` rows in one claim, best first. A single row carries the caller's token;
    // rows of a batch each get a fresh one (made by the database where it can).
    const claimRows = (input: ClaimInput, limit: number): Effect.Effect<ReadonlyArray<JobRow>, SqlError> => {
      const strategy = d.claim
      switch (strategy.kind) {
        case "returning": {
          // Where the dialect can, the claim takes the claimed jobs' leases too (migration 11), once
          // the lease tables are known to exist, and never inside a transaction: a lease row left
          // uncommitted until the caller's (or a capped claim's) transaction ends would hold up
          // every claim that meets its name (docs/behaviour.md §8).
          const { leases } = strategy
          const claimed = (parts: ClaimParts) => {
            const plain = () => jobs(strategy.statement(s.context, parts))
            if (leases.kind === "inAttempt") return plain()
            const taking = () =>
              Effect.map(
                rows(leases.statement(s.context, parts, { host: input.host, now: input.now })),
                (r) => r.map(decodeClaimedRow)
              )
            // Once the lease tables are known, the choice is made in the transaction check's step
            // (on an idle worker every step before the statement goes out is on the job's path).
            return inTransactionWith((inside) =>
              inside
                ? plain()
                : leaseTablesKnown
                ? taking()
                : Effect.flatMap(lookUpLeaseTables, (seen) => (seen ? taking() : plain()))
            )
          }
          return limit <= 1
            ? claimed(s.claimParts(input, 1))
            : Effect.map(
              claimed(s.claimParts(input, limit, strategy.newToken)),
              (r) => [...r].sort(claimOrder)
            )
        }
        case "lockThenUpdate": {
          if (packedClaim !== undefined) {
            // One round trip: lock, claim and read back (best first, as the other dialects' claims).
            const tokens = Array.from({ length: limit }, (_, i) => (i === 0 ? input.claimToken : randomUUID()))
            const parts = s.claimParts(input, limit, packedClaim.token(s.context, tokens))
            return Effect.map(
              packedTransaction(sql, packedClaim.statement(s.context, parts, input.host, tokens)),
              (results) => lastRows(results).map(decodeJobRow).sort(claimOrder)
            )
          }
          // Holding the picked rows' locks, update them by id; they end as applyClaim says.
          return transaction(Effect.gen(function*() {
            const parts = s.claimParts(input, limit)
            const locked = yield* jobs(strategy.pickDue(s.context, parts.due, parts.limit))
            // One per key: the best row of each `claim_lease` (the others' locks end with the transaction).
            const picked = parts.onePerKey ? onePerKey(locked) : locked
            if (picked.length === 0) {
              return []
            }
            const tokens = picked.map((r, i) => ({ id: r.id, token: i === 0 ? input.claimToken : randomUUID() }))
            yield* changed(s.claimByIds(input, tokens))
            return picked.map((r, i) => applyClaim(r, { ...input, claimToken: tokens[i]!.token }))
          }))
        }
      }
    }
    const claimRow = (input: ClaimInput) => Effect.map(claimRows(input, 1), (r) => Option.fromNullable(r[0]))

    // Concurrent uncapped claims (a worker's fibers) go as one statement; see ./batching.ts.
    // Claims for different queues, hosts or caps are grouped apart; the latest `now` is used.
    const claimTogether = makeBatcher<ClaimInput, Option.Option<JobRow>, SqlError>(64, (inputs) =>
      Effect.gen(function*() {
        const groups = new Map<string, Array<number>>()
        inputs.forEach((input, i) => {
          const key = JSON.stringify([input.queues ?? null, input.host, input.timeoutCap ?? null, input.perKey ?? null])
          groups.set(key, [...(groups.get(key) ?? []), i])
        })
        const out: Array<Option.Option<JobRow>> = inputs.map(() =>
          Option.none()
        )
        for (const members of groups.values()) {
          const first = inputs[members[0]!]!
          const now = Math.max(...members.map((i) => inputs[i]!.now))
          const claimed = yield* retryTransient(dialect, "claim", claimRows({ ...first, now }, members.length))
          claimed.forEach((row, k) => (out[members[k]!] = Option.some(row)))
        }
        return out
      }))

    const claim = (input: ClaimInput): Effect.Effect<ClaimResult, SqlError> => {
      const cap = input.hostCap ?? 0
      if (cap <= 0) {
        return Effect.map(
          inTransactionWith((inside) => (inside ? claimRow(input) : claimTogether(input))),
          Option.match({
            onNone: (): ClaimResult => ({ _tag: "NothingDue" }),
            onSome: (job): ClaimResult => ({ _tag: "Claimed", job })
          })
        )
      }
      const strategy = d.hostCap
      switch (strategy.kind) {
        case "countInClaim":
          // One statement counts and claims (SQLite: one writer at a time).
          return Effect.flatMap(
            retryTransient(
              dialect,
              "claim",
              jobs(strategy.statement(s.context, s.claimParts(input, 1, undefined, cap)))
            ),
            (r) =>
              r[0] !== undefined
                ? Effect.succeed<ClaimResult>({ _tag: "Claimed", job: r[0] })
                : Effect.map(countRunning(input.host), (running): ClaimResult =>
                  running >= cap ? { _tag: "Capped", running } : { _tag: "NothingDue" })
          )
        case "lockHostRow":
          // The host row is locked while counting and claiming, so two claimers on one host
          // cannot both see room for one more.
          return retryTransient(
            dialect,
            "claim",
            transaction(Effect.gen(function*() {
              yield* changed(s.ensureHost(input.host, input.now))
              yield* rows(strategy.lockHost(s.context, input.host, input.now))
              const running = yield* countRunning(input.host)
              if (running >= cap) {
                return { _tag: "Capped", running } as ClaimResult
              }
              return Option.match(yield* claimRow(input), {
                onNone: (): ClaimResult => ({ _tag: "NothingDue" }),
                onSome: (job): ClaimResult => ({ _tag: "Claimed", job })
              })
            }))
          )
      }
    }

    // A guarded job-row write on its own; a deadlock victim is sent again at once (./retry.ts).
    const yes = (purpose: string, st: Statement) =>
      retryTransient(
        dialect,
        purpose,
        Effect.map(write(st), (n) => n > 0)
      )

    // A lost connection leaves a statement run or not run. finish's writes are all fenced (on
    // the claim token, the lease owner), so sending one again cannot write twice (./retry.ts).
    const patiently = <A>(purpose: string, detail: string, effect: Effect.Effect<A, SqlError>) =>
      retryReconnecting(dialect, purpose, detail, effect)

    const leaseSql = leaseStatements(dialect.syntax, dialect.lease, tables.jobLocks)
    // When a retried write reports "fenced", the first try may have run and only its reply been
    // lost: the row tells.
    const confirm = (input: FinishInput, written: boolean, retried: boolean) =>
      written || !retried
        ? Effect.succeed(written)
        : Effect.map(
          first(s.byId(input.id), decodeJobRow),
          Option.exists((r) => showsOutcome(r, input.token, input.outcome))
        )
    // When a retried release found nothing to delete, the first try may have deleted it. A lease
    // someone took before our finish began was taken over (lost); anything else we released.
    const lostAfterRetry = (input: FinishInput, name: string) =>
      Effect.map(first(leaseSql.read(name), decodeLeaseRow), (row): Finished["lease"] =>
        Option.exists(row, (r) =>
            r.owner !== input.token && r.acquiredAt < input.now)
          ? "lost"
          : "released")

    // One attempt (id, claim token) or lease (name, owner) in a batch's answer: two attempts of one
    // job may share a batch.
    const key = (a: unknown, b: unknown) =>
      `${String(a)}\u0000${String(b)}`

    // Concurrent plain completions (no lease) go as one statement, each fenced on its own token.
    // Each item's result is its `Finished` itself (a map per completion was two steps per job).
    const completed: Finished = { written: true, lease: "none" }
    const fenced: Finished = { written: false, lease: "none" }
    const finishedOf = (written: boolean) => (written ? completed : fenced)
    const completeTogether = makeBatcher<FinishInput, Finished, SqlError>(64, (items) =>
      Effect.gen(function*() {
        if (items.length === 1) {
          return [finishedOf((yield* finishAlone(items[0]!)).written)]
        }
        let tries = 0
        const now = Math.max(...items.map((i) =>
          i.now
        ))
        const st = s.completeBatch(items, now)
        // Two attempts of one job (one of them fenced) may share a batch: match id and token.
        const sent = yield* patiently(
          "complete",
          `${items.length} jobs`,
          Effect.suspend(() => (tries++,
            d.updateReports === "rows"
              ? Effect.map(rows(st), (r) => new Set(r.map((x) => key(x.id, x.claim_token))))
              : Effect.map(write(st), (n) => (n === items.length
                ? new Set(items.map((i) => key(i.id, i.token)))
                : undefined)))
          )
        )
        if (sent !== undefined && tries === 1) return items.map((i) => finishedOf(sent.has(key(i.id, i.token))))
        // MySQL with some fenced, or a retry after a lost reply: completion keeps the token, so
        // the rows tell exactly which were completed by these attempts.
        const done = new Set((yield* rows(s.completedOf(items.map((i) => i.id)))).map((r) => key(r.id, r.claim_token)))
        return items.map((i) => finishedOf(done.has(key(i.id, i.token))))
      }))

    // Concurrent leased completions go as one statement where the dialect has one (PostgreSQL):
    // the outcomes, the releases and the hand-offs (issue 13: a finish statement per exclusive
    // job was half of its statements). One on its own goes as `finishAlone`.
    const finishStrategy = d.finish
    const completeLeasedTogether = finishStrategy.kind === "oneStatement"
      ? makeBatcher<FinishInput & { readonly lease: string }, Finished, SqlError>(64, (items) =>
        items.length === 1
          ? Effect.map(finishAlone(items[0]!), (f) => [f])
          : Effect.gen(function*() {
            let tries = 0
            const now = Math.max(...items.map((i) => i.now))
            const st = finishStrategy.completeLeased(s.context, s.completeLeasedParts(items, now))
            const r = yield* patiently("finish", `${items.length} jobs`, Effect.suspend(() => (tries++, rows(st))))
            const of = (kind: string) => new Set(r.filter((x) => x.kind === kind).map((x) => key(x.a, x.b)))
            const done = of("done")
            const released = of("released")
            if (r.some((x) => x.kind === "woke" && int(x.a) > 0)) yield* woken
            // Answered on the first try, the rows tell each attempt's outcome and release at once.
            if (tries === 1) {
              return items.map((i): Finished => ({
                written: done.has(key(i.id, i.token)),
                lease: released.has(key(i.lease, i.token)) ? "released" : "lost"
              }))
            }
            // Sent again after a lost reply, the first try may have written and released: the rows
            // and the lease table tell, for each attempt (its hand-off went with its release).
            return yield* Effect.forEach(items, (i) =>
              Effect.gen(function*() {
                const written = yield* confirm(i, done.has(key(i.id, i.token)), true)
                if (released.has(key(i.lease, i.token))) return { written, lease: "released" as const }
                return { written, lease: yield* lostAfterRetry(i, i.lease) }
              }))
          }))
      : undefined

    const finish = (input: FinishInput): Effect.Effect<Finished, SqlError> => {
      if (input.outcome._tag !== "Complete") return finishAlone(input)
      const lease = input.lease
      return inTransactionWith((inside) => {
        if (inside) return finishAlone(input)
        if (lease === undefined) return completeTogether(input)
        // A release that wakes nobody, or a lease passed on, goes on its own: the batch statement
        // releases and hands off every lease.
        return completeLeasedTogether === undefined || !finishHandsOff(input) || input.transferTo !== undefined
          ? finishAlone(input)
          : completeLeasedTogether({ ...input, lease })
      })
    }

    // The outcome, the release and the hand-off in one round trip where the dialect can
    // (src/adapters/sql/dialect.ts `FinishStrategy`): its row of counts, or undefined (steps).
    const packedFinish = d.finish.kind === "steps" && !isGaleraCluster(sql) ? d.finish.packed : undefined
    const packedTransfer = packedFinish === undefined || d.finish.kind !== "steps" ? undefined : d.finish.packedTransfer
    // Not packed inside the caller's transaction, whose isolation its SETs cannot change. A lease
    // passed on (`transferTo`) is packed in a transaction of its own where the dialect can, else
    // passed in steps; one not passed on (`unlessWaiting`: a job waits on it) is then released in steps.
    const finishTogether = (input: FinishInput, lease: string, inside: boolean) => {
      const to = input.transferTo
      const parts = () => ({
        ...s.finishParts(input.id, input.token, input.now, input.outcome, lease, finishHandsOff(input)),
        transfer: to === undefined ? undefined : s.transferLease(lease, input.token, input.now, to, input.id)
      })
      if (d.finish.kind === "oneStatement") return rows(d.finish.statement(s.context, parts()))
      if (packedFinish === undefined || inside) return undefined
      if (to !== undefined) {
        return packedTransfer === undefined
          ? undefined
          : Effect.map(packedTransaction(sql, packedTransfer(s.context, parts())), lastRows)
      }
      const st = packedFinish(s.context, parts())
      return Effect.map(
        sql.unsafe(st.sql, st.params as Array<unknown>).unprepared,
        lastRows
      )
    }

    const finishAlone = (input: FinishInput): Effect.Effect<Finished, SqlError> =>
      Effect.gen(function*() {
        let tries = 0
        const counted = <A>(effect: Effect.Effect<A, SqlError>) => Effect.suspend(() => (tries++, effect))
        const lease = input.lease
        const together = lease === undefined ? undefined : finishTogether(input, lease, yield* inTransaction)
        if (lease !== undefined && together !== undefined) {
          const r = (yield* patiently("finish", `job ${input.id}`, counted(together)))[0] ?? {}
          const written = yield* confirm(input, int(r.written) > 0, tries > 1)
          if (int(r.woke) > 0) yield* woken
          if (int(r.released) > 0) {
            if (r.transferred === null || r.transferred === undefined) return { written, lease: "released" }
            return { written, lease: "released", transferred: decodeToken(r.transferred) }
          }
          // Not passed on with `unlessWaiting`: a job waits on it asleep (or it is not ours). Still
          // ours, it is released and handed off as in steps, which also tells a lease not ours.
          if (
            input.transferTo?.unlessWaiting === true &&
            (tries === 1 ||
              Option.exists(yield* first(leaseSql.read(lease), decodeLeaseRow), (row) => row.owner === input.token))
          ) {
            return yield* releaseAfter(input, written, lease)
          }
          if (tries === 1) return { written, lease: "lost" }
          // A packed finish sent again may have released the lease on its first try and failed
          // before its hand-off: hand off now.
          const after = yield* lostAfterRetry(input, lease)
          if (after === "released" && d.finish.kind === "steps" && finishHandsOff(input)) {
            yield* Effect.ignoreLogged(handOff(lease, input.now, input.id))
          }
          return { written, lease: after }
        }
        const n = yield* patiently(
          "finish",
          `job ${input.id}`,
          counted(write(s.outcome(input.id, input.token, input.now, input.outcome)))
        )
        const written = yield* confirm(input, n > 0, tries > 1)
        if (lease === undefined) return { written, lease: "none" }
        if (input.transferTo !== undefined) {
          const passed = yield* transferLease(input, written, lease, input.transferTo)
          if (passed !== undefined) return passed
        }
        return yield* releaseAfter(input, written, lease)
      })

    // Our lease released after the outcome (owner-fenced). Where the release reports whether anyone
    // waits, the hand-off is sent only then. A job that defers after the release looks at the lease
    // again itself (src/runtime/worker/attempt.ts).
    const releaseAfter = (input: FinishInput, written: boolean, lease: string): Effect.Effect<Finished, SqlError> =>
      Effect.gen(function*() {
        let tries = 0
        const counted = <A>(effect: Effect.Effect<A, SqlError>) => Effect.suspend(() => (tries++, effect))
        const release = d.updateReports === "rows"
          ? Effect.map(rows(s.releaseLeaseReportingWaiter(lease, input.token, input.id)), (r) => ({
            n: r.length,
            waiting: r.some((x) => int(x.waiting) > 0)
          }))
          : Effect.map(changed(s.releaseLease(lease, input.token)), (n) => ({ n, waiting: true }))
        const released = yield* Effect.either(patiently("release", `lease ${lease}`, counted(release)))
        if (Either.isLeft(released)) {
          yield* Effect.logWarning(`lease ${lease} release failed; it will expire`, released.left)
          return { written, lease: "unknown" }
        }
        if (released.right.n > 0) {
          if (released.right.waiting && finishHandsOff(input)) {
            yield* Effect.ignoreLogged(handOff(lease, input.now, input.id))
          }
          return { written, lease: "released" }
        }
        return { written, lease: tries > 1 ? yield* lostAfterRetry(input, lease) : "lost" }
      })

    // The lease passed on instead of released (FinishInput `transferTo`): the owner-fenced move
    // and the bump of the name's token counter in one transaction, so a new owner always has a
    // new token. Where the lease dialect acquires by `bumpThenUpsert` (SQLite: one writer at a
    // time, each statement alone), the same two without a transaction, as its acquisition does:
    // bump first, then move only while the counter still holds the bumped token. A bump whose
    // move did not happen is a token nobody holds.
    const bumpFirst = dialect.lease.acquire.kind === "bumpThenUpsert"
    const bumpToken = (lease: string) =>
      Effect.gen(function*() {
        let last: ReadonlyArray<Record<string, unknown>> = []
        for (const st of leaseSql.bumpToken(lease)) last = yield* rows(st)
        return decodeToken(last[0]?.token)
      })
    const transferLease = (input: FinishInput, written: boolean, lease: string, to: LeaseTransfer) =>
      Effect.gen(function*() {
        let tries = 0
        const moved = yield* Effect.either(patiently(
          "transfer",
          `lease ${lease}`,
          Effect.suspend(() => {
            tries++
            if (bumpFirst) {
              return retryTransient(
                dialect,
                "transfer",
                Effect.flatMap(bumpToken(lease), (token) =>
                  Effect.map(
                    changed(s.transferLease(lease, input.token, input.now, to, input.id, token)),
                    (n) => (n === 0 ? undefined : token)
                  ))
              )
            }
            const move = Effect.gen(function*() {
              if ((yield* changed(s.transferLease(lease, input.token, input.now, to, input.id))) === 0) return undefined
              return yield* bumpToken(lease)
            })
            // A new token counts only once its bump committed (checked on a Galera cluster); a
            // deadlock victim, rolled back whole, is sent again.
            return retryTransient(
              dialect,
              "transfer",
              readCommitted
                ? readCommittedTransaction(sql, move, { mustCommitWrites: (token) => token !== undefined })
                : transaction(move)
            )
          })
        ))
        if (Either.isLeft(moved)) {
          yield* Effect.logWarning(`lease ${lease}: passing it on failed; it will expire`, moved.left)
          return { written, lease: "unknown" } satisfies Finished
        }
        if (moved.right !== undefined) {
          return { written, lease: "released", transferred: moved.right } satisfies Finished
        }
        // Sent again after a lost reply: an earlier try may have moved it, and the lease row tells
        // (the new owner, finding the lease its own, reads its token itself).
        if (
          tries > 1 &&
          Option.exists(yield* first(leaseSql.read(lease), decodeLeaseRow), (r) => r.owner === to.owner)
        ) {
          return { written, lease: "released" } satisfies Finished
        }
        // Not moved: a job waits on it asleep (`unlessWaiting`), so the caller releases and hands
        // off as usual (which also tells a lease no longer ours); or it is not ours.
        if (to.unlessWaiting === true) return undefined
        return { written, lease: tries > 1 ? yield* lostAfterRetry(input, lease) : "lost" } satisfies Finished
      })

    // A job woken (due now): this process's workers are rung (src/adapters/localWakeups.ts), since
    // on MySQL and SQLite nothing else would until their next poll, and other processes' are
    // notified where the database can (PostgreSQL).
    const woken = inTransactionWith((inside) => Effect.zipRight(LocalWakeups.ring(tables.channel), notifyWoken(inside)))
    const handOff = (leaseName: string, now: number, exceptId?: string) =>
      Effect.tap(yes("hand-off", s.handOff(leaseName, now, exceptId)), (woke) => (woke ? woken : Effect.void))

    // A stopping worker's attempts: one statement on PostgreSQL; elsewhere the leases (released
    // with RETURNING where the database has it, else read first), one hand-off statement for all
    // of them, then one give-back for every attempt. Every step is fenced (lease owner, claim
    // token), so a deadlock victim is simply sent again.
    const handBack = (claims: ReadonlyArray<Claim>, now: number): Effect.Effect<HandedBack, SqlError> => {
      if (claims.length === 0) return Effect.succeed({ handedBack: 0, released: 0, woke: 0 })
      const tokens = claims.map((c) => c.token)
      const strategy = d.finish
      const done = (result: HandedBack) => Effect.as(result.handedBack + result.woke > 0 ? woken : Effect.void, result)
      switch (strategy.kind) {
        case "oneStatement":
          return retryTransient(
            dialect,
            "hand back",
            Effect.flatMap(rows(strategy.handBack(s.context, s.handBackParts(claims, now))), (r) =>
              done({
                handedBack: int(r[0]?.handed_back ?? 0),
                released: int(r[0]?.released ?? 0),
                woke: int(r[0]?.woke ?? 0)
              }))
          )
        case "steps":
          return retryTransient(
            dialect,
            "hand back",
            Effect.gen(function*() {
              const names = (r: ReadonlyArray<Record<string, unknown>>) => r.map((x) => String(x.lockname))
              let released: ReadonlyArray<string>
              if (d.updateReports === "rows") released = names(yield* rows(s.releaseOwnedBy(tokens, true)))
              else {
                released = names(yield* rows(s.leasesOwnedBy(tokens)))
                if (released.length > 0) yield* changed(s.releaseOwnedBy(tokens, false))
              }
              const woke = released.length === 0 ? 0 : yield* write(s.handOffEach(new SqlList(released), now))
              const handedBack = yield* write(s.giveBackMany(claims, now))
              return yield* done({ handedBack, released: released.length, woke })
            })
          )
      }
    }

    const probe = wakeups.kind === "poll" ? wakeups.probe : undefined
    const idleProbe = Option.map(Option.fromNullable(probe), (p) => ({
      everyMs: p.everyMs,
      read: (input: ClaimInput) =>
        Effect.map(rows(p.statement(s.context, input, s.due(input))), (r) => {
          const first = r[0] === undefined ? undefined : Object.values(r[0])[0]
          return first === undefined || first === null ? null : String(first)
        })
    }))
    // Claims checked at the same time (runners starting claimed jobs) are read in one SELECT.
    const claimState = makeBatcher<Claim, ClaimState, SqlError>(64, (claims) =>
      Effect.map(
        rows(s.claimsOf([...new Set(claims.map((c) => c.id))])),
        (found) => {
          const byId = new Map(found.map((r) => [String(r.id), r]))
          return claims.map((c) => {
            const r = byId.get(c.id)
            const row = r === undefined
              ? undefined
              : {
                status: String(r.status) as JobStatus,
                claimToken: r.claim_token == null ? null : String(r.claim_token)
              }
            return claimStateOf(row, c.token)
          })
        }
      ))

    // A store on tables never migrated says so in its failures' messages (../schemaErrors.ts).
    return hintingMissingSchema(JobStore.of({
      tables,
      idleProbe,
      remote: !dialect.inProcess,
      // A deadlock on the unique key rolled the insert back; sending it again is safe. Outside a
      // transaction, through the lane (./enqueueLane.ts).
      insert: (job) =>
        inTransactionWith((inside) =>
          inside
            ? insertJob(job)
            : Effect.tap(lane.insert(job), (r) => wroteDue([job], [r]) ? notifyWoken(false) : Effect.void)
        ),
      // One transaction (the caller's, when there is one), one INSERT per chunk of rows; outside
      // the caller's, on a place of the lane's.
      insertMany: (many) =>
        many.length === 0 ? Effect.succeed([]) : inTransactionWith((inside) => {
          const inserted = retryTransient(
            dialect,
            "enqueue",
            transaction(Effect.map(
              Effect.forEach(
                Arr.chunksOf(many, INSERT_CHUNK_ROWS),
                (chunk) => insertSettled(chunk, insertRowsWith(inside))
              ),
              (chunks) => chunks.flat()
            ))
          )
          return inside ? inserted : lane.alone(
            Effect.tap(inserted, (r) => (wroteDue(many, r) ? notifyWoken(false) : Effect.void))
          )
        }),
      // Retried where each claim statement or transaction runs: once per rolled-back statement.
      claim,
      finish,
      claimMany: (input, limit) =>
        limit < 1 ? Effect.succeed([]) : retryTransient(dialect, "claim", claimRows(input, limit)),
      giveBack: (id, token, now) => yes("give back", s.giveBack(id, token, now)),
      handBack,
      defer: (id, token, now, runAt, leaseName) => yes("defer", s.defer(id, token, now, runAt, leaseName)),
      heartbeat: (id, token, now, staleAt) => yes("heartbeat", s.heartbeat(id, token, now, staleAt)),
      // Rows past their deadline, then rows without one that core's isStale judges stale (read
      // apart, so live ones of those never crowd the others out of the limit).
      stale: (now, limit) =>
        Effect.zipWith(
          jobs(s.stale(now, limit)),
          jobs(s.withoutDeadline(limit)),
          (past, unknown) => [...past, ...unknown.filter((r) => isStale(r, now))].slice(0, limit)
        ),
      reap: (row, decision, now) => yes("reap", s.reap(row, decision, now)),
      handOff,
      get: (id) => first(s.byId(id), decodeJobRow),
      list: (filter) => jobs(s.list(filter)),
      counts: Effect.map(
        rows(s.counts),
        (r) => r.map((x) => ({ queue: String(x.queue), status: String(x.status) as JobStatus, count: int(x.n) }))
      ),
      queueDepths: (now) =>
        Effect.map(
          rows(s.queueDepths(now)),
          (r) => r.map((x) => ({ queue: String(x.queue), due: int(x.n), oldestRunAt: decodeEpochMs(x.oldest) }))
        ),
      retryDead: (id, now) => yes("retry dead", s.retryDead(id, now)),
      retryDeadWhere: (filter, now, limit) =>
        retryTransient(dialect, "retry dead", write(s.retryDeadWhere(filter, now, limit))),
      discardDeadWhere: (filter, limit) =>
        retryTransient(dialect, "discard dead", write(s.discardDeadWhere(filter, limit))),
      cancel: (filter, now) => retryTransient(dialect, "cancel", write(s.cancel(filter, now))),
      claimState,
      purge: (status, before, limit) => retryTransient(dialect, "purge", write(s.purge(status, before, limit))),
      pruneHosts: (seenBefore, now) => retryTransient(dialect, "prune hosts", changed(s.pruneHosts(seenBefore, now))),
      touchHost: (host, now, fields) => Effect.asVoid(changed(s.upsertHost(host, now, fields))),
      getHost: (host) => first(s.hostByName(host), decodeHostRow),
      listHosts: Effect.map(rows(s.listHosts), (r) => r.map(decodeHostRow)),
      drain: (host, now, expiresAt) =>
        Effect.zipRight(changed(s.ensureHost(host, now)), Effect.asVoid(changed(s.drain(host, now, expiresAt)))),
      resume: (host, now) =>
        Effect.zipRight(changed(s.ensureHost(host, now)), Effect.asVoid(changed(s.resume(host, now)))),
      recordLostLease: (row) =>
        retryTransient(dialect, "record lost lease", Effect.asVoid(changed(s.insertLostLease(row)))),
      lostLeases: (limit) => Effect.map(rows(s.recentLostLeases(limit)), (r) => r.map(decodeLostLeaseRow)),
      // The cut is the older of the age and the count cut-offs' rows: whichever keeps fewer.
      pruneLostLeases: (before, keep) =>
        Effect.gen(function*() {
          const cut = yield* first(s.lostLeaseCut(keep), (r) => decodeEpochMs(r.lost_at))
          const at = Math.max(before ?? Number.NEGATIVE_INFINITY, Option.getOrElse(cut, () => Number.NEGATIVE_INFINITY))
          return at === Number.NEGATIVE_INFINITY
            ? 0
            : yield* retryTransient(dialect, "prune lost leases", write(s.pruneLostLeases(at)))
        })
    }))
  })

/**
 * A layer providing the SQL `JobStore` and `JobLeases` for one prefix over the current
 * `SqlClient`, and the `ScheduleStore` of recurring jobs (./ScheduleStore.ts).
 */
export const layer = (
  options: { readonly prefix?: string | undefined } = {}
): Layer.Layer<JobStore | JobLeases | ScheduleStore, never, SqlClient.SqlClient> =>
  Layer.mergeAll(
    Layer.effect(JobStore, make(options)),
    ScheduleStoreAdapter.layer(options),
    Layer.effect(
      JobLeases,
      Effect.map(LeaseLock.make({ table: tableNames(options.prefix).jobLocks }), rememberingTable)
    )
  )
