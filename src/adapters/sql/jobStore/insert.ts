/**
 * The SQL JobStore's enqueues: one job or many inserted, the rows a taken unique key kept out
 * settled (a duplicate of the holder, or the key freed and the row inserted again), enqueues
 * outside a transaction sent through the lane (../enqueueLane.ts), and idle workers woken for
 * jobs due now.
 */
import * as LocalWakeups from "../../localWakeups.ts"
import type { SqlError } from "@effect/sql/SqlError"
import { Array as Arr, Effect } from "effect"
import { enqueueConnections } from "../../../core/connections.ts"
import type { NewJob } from "../../../core/model.ts"
import { keyFreed } from "../../../core/transitions.ts"
import type { InsertResult, JobStoreApi } from "../../../ports/JobStore.ts"
import { decodeUniqueUntil } from "../decode.ts"
import { makeEnqueueLane } from "../enqueueLane.ts"
import { causeOf, retryTransient } from "../retry.ts"
import { inTransactionWith } from "../transaction.ts"
import type { StoreRunner } from "./runner.ts"
import type { StoreWakeups } from "./wakeups.ts"

/**
 * Rows per INSERT of `insertMany`: 15 parameters each, so a chunk stays far below every
 * database's limit on bound parameters (SQLite 32,766; PostgreSQL and MySQL 65,535).
 */
export const INSERT_CHUNK_ROWS = 1_000
/**
 * Most enqueues of one statement when several wait for the lane (../enqueueLane.ts): enough that a
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
 * The SQL JobStore's `insert` and `insertMany` over `runner`. `poolSize` is the client's pool
 * size (../connections.ts), of which enqueues outside a transaction hold at most their share
 * (src/core/connections.ts).
 */
export const makeInserts = (
  runner: StoreRunner,
  wakeups: StoreWakeups,
  poolSize: number
): Pick<JobStoreApi, "insert" | "insertMany"> => {
  const { changed, dialect, jobDialect, rows, statements, tables, transaction, write } = runner
  const { notifyWoken } = wakeups
  const wakeupStrategy = jobDialect.wakeups

  // The ids a single insert wrote: its own, or none when the unique key is taken (on MySQL a
  // duplicate-key error, kept to raise should no job hold the key). Inside the caller's
  // transaction PostgreSQL notifies in the same statement.
  const insertOne = ([job]: ReadonlyArray<NewJob>): Effect.Effect<Inserted, SqlError> =>
    // As few steps as it takes: an enqueue is on the path of every job's latency.
    Effect.match(
      inTransactionWith((inside) =>
        wakeupStrategy.kind === "notify" && inside
          ? Effect.map(rows(wakeupStrategy.insertNotify(statements.context, job!, tables.channel)), (r) => r.length)
          : changed(statements.insert(job!))
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
    return wakeupStrategy.kind === "notify" && notifying
      ? Effect.map(rows(wakeupStrategy.insertManyNotify(statements.context, many, tables.channel)), ids)
      : jobDialect.updateReports === "rows"
      ? Effect.map(rows(statements.insertMany(many)), ids)
      : Effect.as(write(statements.insertMany(many)), ids(many.filter((j) => j.uniqueKey === j.id)))
  }

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
          (yield* rows(statements.keyHolders([...new Set(unsure.map((j) => j.uniqueKey))]))).map((r) => [
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
        if (freed.size > 0) yield* write(statements.freeKeys([...freed]))
        todo = again
      }
      return many.map((j) => settled.get(j.id)!)
    })

  const insertJob = (job: NewJob) =>
    retryTransient(dialect, "enqueue", Effect.map(insertSettled([job], insertOne), (r) => r[0]!))
  // Enqueues outside a transaction: at most their share of the pool's connections, those that
  // wait going together (../enqueueLane.ts, src/core/connections.ts).
  const lane = makeEnqueueLane({
    places: enqueueConnections(poolSize),
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
  // A job due now written outside a transaction: this process's workers are rung at once (its
  // listener then skips the notification, src/adapters/localWakeups.ts `ORIGIN`), other
  // processes' are notified after the commit (PostgreSQL).
  const rungAndNotified = Effect.zipRight(LocalWakeups.ring(runner.tables.channel), notifyWoken(false))
  const wroteDue = (many: ReadonlyArray<NewJob>, results: ReadonlyArray<InsertResult>) =>
    results.some((r, i) => !r.duplicate && many[i]!.runAt <= many[i]!.now)

  return {
    // A deadlock on the unique key rolled the insert back; sending it again is safe. Outside a
    // transaction, through the lane (../enqueueLane.ts).
    insert: (job) =>
      inTransactionWith((inside) =>
        inside
          ? insertJob(job)
          : Effect.tap(lane.insert(job), (r) => (wroteDue([job], [r]) ? rungAndNotified : Effect.void))
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
          Effect.tap(inserted, (r) => (wroteDue(many, r) ? rungAndNotified : Effect.void))
        )
      })
  }
}
