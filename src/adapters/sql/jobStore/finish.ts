/**
 * The SQL JobStore's finishes: an attempt's outcome written (fenced on its claim token), its
 * lease released or passed on (owner-fenced), and the best job waiting on that lease handed it.
 *
 * Two words below. "Batched": concurrent calls sent together as one statement by ../batching.ts,
 * several attempts in one statement. "Packed": several statements sent in one multi-statement
 * round trip (MySQL/MariaDB off a Galera cluster, whose commit could not be checked).
 *
 * Every path of `finish` (only a Complete outcome is ever batched; a batch of one goes as
 * `finishAlone`):
 *
 * | dialect    | batched | leased | transfer | Galera | caller's tx | path                                      |
 * | ---------- | ------- | ------ | -------- | ------ | ----------- | ----------------------------------------- |
 * | any        | yes     | no     | –        | any    | no          | `completeTogether`: one UPDATE            |
 * | any        | no      | no     | –        | any    | any         | `finishAlone`: the outcome UPDATE         |
 * | PostgreSQL | yes     | yes    | no       | –      | no          | `completeLeasedTogether`: one statement   |
 * | PostgreSQL | no      | yes    | any      | –      | any         | `finishAlone`: one statement              |
 * | MySQL      | no      | yes    | no       | no     | no          | `finishAlone`: packed                     |
 * | MySQL      | no      | yes    | yes      | no     | no          | `finishAlone`: packed, one transaction    |
 * | MySQL      | no      | yes    | any      | yes    | any         | `finishAlone`: in steps                   |
 * | MySQL      | no      | yes    | any      | no     | yes         | `finishAlone`: in steps                   |
 * | SQLite     | no      | yes    | any      | –      | any         | `finishAlone`: in steps                   |
 *
 * PostgreSQL batches a leased completion only when it hands off (a release that wakes nobody goes
 * alone) and passes no lease on; its one statement is `FinishStrategy` `oneStatement`'s. MySQL's
 * packed forms are `steps.packed` and `steps.packedTransfer`; a transfer refused because a job
 * waits on the lease (`unlessWaiting`) is then released in steps. In steps: the outcome, then
 * `transferLease` (the move and the bump of the name's token counter in one transaction; SQLite:
 * bump, then move, no transaction), then `releaseAfter` (the release, then the hand-off).
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Either, Option } from "effect"
import { decodeToken } from "../../../core/lease.ts"
import type { FinishInput, Finished, LeaseTransfer } from "../../../core/model.ts"
import { finishHandsOff, showsOutcome } from "../../../core/transitions.ts"
import type { JobStoreApi } from "../../../ports/JobStore.ts"
import { makeBatcher } from "../batching.ts"
import { decodeJobRow, decodeLeaseRow, int } from "../decode.ts"
import { leaseStatements } from "../leaseStatements.ts"
import { retryTransient } from "../retry.ts"
import {
  inTransaction,
  inTransactionWith,
  lastRows,
  packedTransaction,
  readCommittedTransaction
} from "../transaction.ts"
import type { StoreRunner } from "./runner.ts"
import type { StoreWakeups } from "./wakeups.ts"

/** The SQL JobStore's `finish` and `handOff` over `runner`. */
export const makeFinish = (runner: StoreRunner, wakeups: StoreWakeups): Pick<JobStoreApi, "finish" | "handOff"> => {
  const {
    changed,
    dialect,
    first,
    guardedWrite,
    jobDialect,
    readCommitted,
    retryingReconnect,
    rows,
    sql,
    statements,
    tables,
    transaction,
    write
  } = runner
  const { woken } = wakeups

  const leaseSql = leaseStatements(dialect.syntax, dialect.lease, tables.jobLocks)
  // When a retried write reports "fenced", the first try may have run and only its reply been
  // lost: the row tells.
  const confirm = (input: FinishInput, written: boolean, retried: boolean) =>
    written || !retried
      ? Effect.succeed(written)
      : Effect.map(
        first(statements.byId(input.id), decodeJobRow),
        Option.exists((r) => showsOutcome(r, input.token, input.outcome))
      )
  // When a retried release found nothing to delete, the first try may have deleted it. A lease
  // someone took before our finish began was taken over (lost); anything else we released.
  const lostAfterRetry = (input: FinishInput, name: string) =>
    Effect.map(
      first(leaseSql.read(name), decodeLeaseRow),
      (row): Finished["lease"] =>
        Option.exists(row, (r) => r.owner !== input.token && r.acquiredAt < input.now)
          ? "lost"
          : "released"
    )

  // One attempt (id, claim token) or lease (name, owner) in a batch's answer: two attempts of one
  // job may share a batch.
  const key = (a: unknown, b: unknown) => `${String(a)}\u0000${String(b)}`

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
      const now = Math.max(...items.map((i) => i.now))
      const st = statements.completeBatch(items, now)
      // Two attempts of one job (one of them fenced) may share a batch: match id and token.
      const sent = yield* retryingReconnect(
        "complete",
        `${items.length} jobs`,
        Effect.suspend(() => (tries++,
          jobDialect.updateReports === "rows"
            ? Effect.map(rows(st), (r) => new Set(r.map((x) => key(x.id, x.claim_token))))
            : Effect.map(write(st), (n) => (n === items.length
              ? new Set(items.map((i) => key(i.id, i.token)))
              : undefined)))
        )
      )
      if (sent !== undefined && tries === 1) return items.map((i) => finishedOf(sent.has(key(i.id, i.token))))
      // MySQL with some fenced, or a retry after a lost reply: completion keeps the token, so
      // the rows tell exactly which were completed by these attempts.
      const done = new Set(
        (yield* rows(statements.completedOf(items.map((i) => i.id)))).map((r) => key(r.id, r.claim_token))
      )
      return items.map((i) => finishedOf(done.has(key(i.id, i.token))))
    }))

  // Concurrent leased completions go as one statement where the dialect has one (PostgreSQL):
  // the outcomes, the releases and the hand-offs, not a finish statement per exclusive job. One
  // on its own goes as `finishAlone`.
  const finishStrategy = jobDialect.finish
  const completeLeasedTogether = finishStrategy.kind === "oneStatement"
    ? makeBatcher<FinishInput & { readonly lease: string }, Finished, SqlError>(64, (items) =>
      items.length === 1
        ? Effect.map(finishAlone(items[0]!), (f) => [f])
        : Effect.gen(function*() {
          let tries = 0
          const now = Math.max(...items.map((i) => i.now))
          const st = finishStrategy.completeLeased(statements.context, statements.completeLeasedParts(items, now))
          const r = yield* retryingReconnect(
            "finish",
            `${items.length} jobs`,
            Effect.suspend(() => (tries++, rows(st)))
          )
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
  // (../dialect.ts `FinishStrategy`): its row of counts, or undefined (steps).
  const packedFinish = jobDialect.finish.kind === "steps" && !runner.galeraCluster
    ? jobDialect.finish.packed
    : undefined
  const packedTransfer = packedFinish === undefined || jobDialect.finish.kind !== "steps"
    ? undefined
    : jobDialect.finish.packedTransfer
  // Not packed inside the caller's transaction, whose isolation its SETs cannot change. A lease
  // passed on (`transferTo`) is packed in a transaction of its own where the dialect can, else
  // passed in steps; one not passed on (`unlessWaiting`: a job waits on it) is then released in steps.
  const finishTogether = (input: FinishInput, lease: string, inside: boolean) => {
    const to = input.transferTo
    const parts = () => ({
      ...statements.finishParts(input.id, input.token, input.now, input.outcome, lease, finishHandsOff(input)),
      transfer: to === undefined ? undefined : statements.transferLease(lease, input.token, input.now, to, input.id)
    })
    if (jobDialect.finish.kind === "oneStatement") return rows(jobDialect.finish.statement(statements.context, parts()))
    if (packedFinish === undefined || inside) return undefined
    if (to !== undefined) {
      return packedTransfer === undefined
        ? undefined
        : Effect.map(packedTransaction(sql, packedTransfer(statements.context, parts())), lastRows)
    }
    const st = packedFinish(statements.context, parts())
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
        const r = (yield* retryingReconnect("finish", `job ${input.id}`, counted(together)))[0] ?? {}
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
        if (after === "released" && jobDialect.finish.kind === "steps" && finishHandsOff(input)) {
          yield* Effect.ignoreLogged(handOff(lease, input.now, input.id))
        }
        return { written, lease: after }
      }
      const n = yield* retryingReconnect(
        "finish",
        `job ${input.id}`,
        counted(write(statements.outcome(input.id, input.token, input.now, input.outcome)))
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
      const release = jobDialect.updateReports === "rows"
        ? Effect.map(rows(statements.releaseLeaseReportingWaiter(lease, input.token, input.id)), (r) => ({
          n: r.length,
          waiting: r.some((x) => int(x.waiting) > 0)
        }))
        : Effect.map(changed(statements.releaseLease(lease, input.token)), (n) => ({ n, waiting: true }))
      const released = yield* Effect.either(retryingReconnect("release", `lease ${lease}`, counted(release)))
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
      const moved = yield* Effect.either(retryingReconnect(
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
                  changed(statements.transferLease(lease, input.token, input.now, to, input.id, token)),
                  (n) => (n === 0 ? undefined : token)
                ))
            )
          }
          const move = Effect.gen(function*() {
            if ((yield* changed(statements.transferLease(lease, input.token, input.now, to, input.id))) === 0) {
              return undefined
            }
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

  // The best job waiting on the lease made due now; a job woken wakes idle workers (./wakeups.ts).
  const handOff = (leaseName: string, now: number, exceptId?: string) =>
    Effect.tap(
      guardedWrite("hand-off", statements.handOff(leaseName, now, exceptId)),
      (woke) => (woke ? woken : Effect.void)
    )

  return { finish, handOff }
}
