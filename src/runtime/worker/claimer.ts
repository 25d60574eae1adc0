/**
 * The long-running worker's claimer (docs/behaviour.md §9): one fiber that claims due jobs in
 * batches into the pipeline (./pipeline.ts) while the runners have room for them, and waits on
 * the doorbell (./doorbell.ts) when nothing is due or its host is draining.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Cause, type Clock, Effect, Option, Queue } from "effect"
import { mayTakeLease } from "../../core/lease.ts"
import type { JobRow } from "../../core/model.ts"
import type { JobStoreApi } from "../../ports/JobStore.ts"
import type { JobsApi } from "../Job.ts"
import { CLAIM_AHEAD_MS } from "./claimAhead.ts"
import type { Doorbell } from "./doorbell.ts"
import { warnFailure } from "./explain.ts"
import type { DrainView } from "./hosts.ts"
import type { KeyClaims } from "./keyClaims.ts"
import type { Resolved } from "./options.ts"
import type { Pipeline } from "./pipeline.ts"
import { claimInputAt } from "./turns.ts"

/** What the claimer works with, all made by `make` (./longRunning.ts). */
export interface ClaimerParts {
  readonly o: Resolved
  readonly concurrency: number
  readonly store: JobStoreApi
  /** The worker's Clock, read in place. */
  readonly clock: Clock.Clock
  readonly registry: JobsApi
  readonly bell: Doorbell
  readonly drainView: DrainView
  readonly keyClaims: KeyClaims
  readonly pipeline: Pipeline
}

/** The claimer's loop, until the doorbell is stopped; only an interruption ends it early. */
export const makeClaimer = (
  { bell, clock, concurrency, drainView, keyClaims, o, pipeline, registry, store }: ClaimerParts
): Effect.Effect<void, SqlError> => {
  const { ready, room, slotFreed, starts } = pipeline
  const limitOf = (job: JobRow) =>
    Option.match(registry.get(job.name), { onNone: () => 1, onSome: (r) => r.type.concurrencyLimit })
  // Only a worker with job types that take leases claims by key: that claim is a dearer statement.
  const byKey = registry.names.some((name) => Option.exists(registry.get(name), (r) => mayTakeLease(r.type.lease)))
  // Claiming ahead pays on a queue of independent jobs; on a busy concurrency key it only
  // claims jobs to defer. After a deferral, the next 2 × `concurrency` claims are for idle
  // runners only.
  const capacity = () =>
    room.contended > 0
      ? concurrency
      : concurrency + Math.max(concurrency, starts.since(clock.unsafeCurrentTimeMillis() - CLAIM_AHEAD_MS))
  // A batch claim waits until half the buffer's room is free, unless the runners have nothing left.
  const batch = Math.max(1, Math.ceil(concurrency / 2))

  // Claims up to `n` jobs (with `only`, of those keys alone): one statement, or with a host cap
  // one job through the capped claim. Its input is made in place (the worker's Clock read as a
  // plain call): on an idle worker each step before the statement goes out is on the job's
  // path, and costs there what many do in a drain.
  const claimSome = (n: number, only?: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<JobRow>, SqlError> =>
    Effect.suspend(() => {
      const at = claimInputAt(o, clock.unsafeCurrentTimeMillis())
      const input = byKey ? { ...at, perKey: { skip: keyClaims.skip(), only } } : at
      const claimed = (o.hostCap ?? 0) <= 0
        ? store.claimMany(input, n)
        : Effect.map(store.claim(input), (c) => (c._tag === "Claimed" ? [c.job] : []))
      return Effect.map(claimed, (rows) => {
        for (const job of rows) keyClaims.claimed(job, limitOf(job))
        return rows
      })
    })

  return Effect.gen(function*() {
    // Whether to look at the whole queue; else only the freed keys' next jobs are claimed (one
    // statement for the keys freed meanwhile, one job per key), until a ring or the poll: a freed
    // key's next job is all that changed.
    let look = true
    while (!bell.stopping()) {
      if (drainView.fresh() ?? (yield* drainView.read)) {
        yield* bell.idle
        look = true
        continue
      }
      const freedOnly = !look && keyClaims.hasFreed()
      if (!look && !freedOnly) {
        look = yield* bell.idle
        continue
      }
      const free = capacity() - room.active - room.buffered
      if (free < (freedOnly || room.buffered === 0 ? 1 : batch)) {
        yield* Queue.take(slotFreed)
        continue
      }
      let keys: ReadonlyArray<string> | undefined
      if (freedOnly) keys = keyClaims.takeFreed()
      // A look at the whole queue takes freed keys' jobs too.
      else keyClaims.clearFreed()
      const asked = keys === undefined ? free : Math.min(free, keys.length)
      const rows = yield* Effect.catchAllCause(claimSome(asked, keys), (cause) =>
        // A database hiccup (or the database is gone): log, wait a poll, carry on. Defects too:
        // a ROLLBACK on a broken connection dies inside @effect/sql, and a claimer that died
        // would silently stop claiming. Only an interruption ends the loop.
        Cause.isInterruptedOnly(cause)
          ? Effect.failCause(cause)
          : Effect.as(
            warnFailure((reason) => `claim failed (${reason}); retrying after the poll interval`, cause),
            []
          ))
      room.buffered += rows.length
      room.contended = Math.max(0, room.contended - rows.length)
      const claimedAt = clock.unsafeCurrentTimeMillis()
      ready.offerAll(rows.map((job) => ({ job, claimedAt })))
      // Fewer than asked: nothing more is due now (wait for a wake-up signal or the poll), unless
      // the claim took a job of a key: it took one per key, so look again (./keyClaims.ts).
      if (keys === undefined && rows.length < free && rows.every((job) => job.claimLease === null)) look = false
    }
  })
}
