/**
 * How the SQL JobStore lets idle workers know of work: a job woken rings this process's workers
 * (src/adapters/localWakeups.ts) and, where the database can (PostgreSQL), notifies other
 * processes' (../wakeupSignal.ts); where it cannot, idle workers look with the dialect's probe.
 * Shared by the inserts, the finishes and the hand-back.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Option } from "effect"
import type { ClaimInput } from "../../../core/model.ts"
import type { JobStoreApi } from "../../../ports/JobStore.ts"
import * as LocalWakeups from "../../localWakeups.ts"
import { inTransactionWith } from "../transaction.ts"
import { makeWakeupSignal } from "../wakeupSignal.ts"
import type { StoreRunner } from "./runner.ts"

/** The wake-ups of one SQL JobStore. */
export interface StoreWakeups {
  /**
   * Notifies other processes' idle workers where the database can: after a write outside any
   * transaction, coalesced; inside the caller's transaction (`inside`), in it. Nothing elsewhere.
   */
  readonly notifyWoken: (inside: boolean) => Effect.Effect<void, SqlError>
  /** A job woken (due now): rings this process's workers and notifies other processes'. */
  readonly woken: Effect.Effect<void, SqlError>
  /** The dialect's cheap look for work between polls, where workers poll (JobStoreApi `idleProbe`). */
  readonly idleProbe: JobStoreApi["idleProbe"]
}

/** The wake-ups of the SQL JobStore that `runner` runs. */
export const makeStoreWakeups = (runner: StoreRunner): StoreWakeups => {
  const { rows, statements, tables } = runner
  const wakeups = runner.jobDialect.wakeups

  // Wake idle workers of other processes (PostgreSQL): a notification after a write outside
  // any transaction, coalesced; inside the caller's transaction, in it (../wakeupSignal.ts).
  const signal = wakeups.kind === "notify"
    ? makeWakeupSignal((payload) => rows(wakeups.notify(tables.channel, payload)))
    : undefined
  const notifyWoken = (inside: boolean): Effect.Effect<void, SqlError> =>
    signal === undefined ? Effect.void : inside ? signal.inTransaction : signal.afterCommit

  // A job woken (due now): this process's workers are rung (src/adapters/localWakeups.ts), since
  // on MySQL and SQLite nothing else would until their next poll, and other processes' are
  // notified where the database can (PostgreSQL).
  const woken = inTransactionWith((inside) => Effect.zipRight(LocalWakeups.ring(tables.channel), notifyWoken(inside)))

  const probe = wakeups.kind === "poll" ? wakeups.probe : undefined
  const idleProbe = Option.map(Option.fromNullable(probe), (p) => ({
    everyMs: p.everyMs,
    read: (input: ClaimInput) =>
      Effect.map(rows(p.statement(statements.context, input, statements.due(input))), (r) => {
        const first = r[0] === undefined ? undefined : Object.values(r[0])[0]
        return first === undefined || first === null ? null : String(first)
      })
  }))

  return { notifyWoken, woken, idleProbe }
}
