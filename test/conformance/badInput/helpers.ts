/**
 * Store helpers shared by the bad-input conformance areas in this folder: table snapshots to
 * compare before and after a refused call, row reads and hand-written inserts, and a probe
 * that records what each attempt saw.
 */
import type { Vitest } from "@effect/vitest"
import { Deferred, Effect, Option, Ref, Schema } from "effect"
import { randomUUID } from "node:crypto"
import { JobLeases, type JobRow, JobStore, type NewJob } from "../../../src/JobStore.ts"
import type { LeaseLockApi } from "../../../src/LeaseLock.ts"
import type { LeaseRow } from "../../../src/core/lease.ts"
import { type HeldLease, JobContext } from "../../../src/runtime/Job.ts"
import type { AdapterName, TestDatabase } from "../../support/databases.ts"
import { T0 } from "./inputs.ts"

/** One area of the catalogue: registers its tests on a suite's `it`, for one adapter. */
export type BadInputArea = (it: Vitest.MethodsNonLive<TestDatabase>, adapter: AdapterName) => void

/** The payload of most job types in the catalogue. */
export const Text = Schema.Struct({ s: Schema.String })

const byId = (a: JobRow, b: JobRow) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/** Every job row, host row and job lease: compared before and after a refused call. */
export const snapshot = Effect.gen(function*() {
  const store = yield* JobStore
  return {
    jobs: [...(yield* store.list({ limit: 100_000 }))].sort(byId),
    hosts: yield* store.listHosts,
    leases: yield* (yield* JobLeases).list
  }
})

/** The job row `id` (it must exist). */
export const row = (id: string) => Effect.flatMap(JobStore, (s) => Effect.map(s.get(id), Option.getOrThrow))

/** Inserts a row as another version of the app (or a hand-written migration) might have. */
export const insertRow = (fields: Pick<NewJob, "name" | "payload"> & Partial<NewJob>) =>
  Effect.flatMap(JobStore, (store) => {
    const id = randomUUID()
    return Effect.as(
      store.insert({
        id,
        queue: "default",
        priority: 0,
        maxRetries: 0,
        claimTimeout: 300,
        uniqueKey: id,
        runAt: T0,
        now: T0,
        ...fields
      }),
      id
    )
  })

/** What one attempt saw, as recorded by `makeProbe`'s perform. */
export interface Seen {
  readonly jobId: string
  readonly name: string
  readonly queue: string
  readonly host: string
  readonly claimToken: string
  readonly payload: unknown
  readonly lease: Option.Option<HeldLease>
  /** The lease's row in the lock table, read during perform. */
  readonly leaseRow: Option.Option<LeaseRow>
}

/** A perform that records what the attempt saw, including its lease row as the database holds it. */
export const makeProbe = Effect.gen(function*() {
  const seen = yield* Ref.make<ReadonlyArray<Seen>>([])
  const leases = yield* Deferred.make<LeaseLockApi>()
  const perform = (payload: unknown) =>
    Effect.gen(function*() {
      const ctx = yield* JobContext
      const lease = yield* ctx.lease
      const leaseRow = Option.isNone(lease)
        ? Option.none<LeaseRow>()
        : yield* Effect.flatMap(Deferred.await(leases), (l) => l.read(lease.value.name))
      yield* Ref.update(seen, (s) => [
        ...s,
        {
          jobId: ctx.jobId,
          name: ctx.name,
          queue: ctx.queue,
          host: ctx.host,
          claimToken: ctx.claimToken,
          payload,
          lease,
          leaseRow
        }
      ])
    })
  return {
    perform,
    /** Gives perform the lease table; run it first inside `withJobs`. */
    bind: Effect.flatMap(JobLeases, (l) => Deferred.succeed(leases, l)),
    last: Effect.map(Ref.get(seen), (s) => s[s.length - 1]!),
    all: Ref.get(seen)
  }
})
