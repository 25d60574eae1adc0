/**
 * Migrations under the migration lock (docs/behaviour.md §1, §10) on every adapter: the schema
 * migration 1 creates, exactly-once application across concurrent runs, waiting for and
 * timing out on a held lock, taking over an expired one, renewal before each step, status and
 * unlock. TestClock drives every wait: a forked run is stepped from sleep to sleep.
 */
import { expect, layer } from "@effect/vitest"
import { Chunk, Clock, Deferred, Effect, Exit, Fiber, Option, Ref, TestClock } from "effect"
import { randomUUID } from "node:crypto"
import { JobLeases, JobStore, type JobStoreApi, type NewJob } from "../../src/JobStore.ts"
import { createJobTables, type Migration, migrations } from "../../src/adapters/sql/schema.ts"
import { leaseExpiresAt, leaseWindowMs } from "../../src/core/lease.ts"
import { tableNames, tokensTable } from "../../src/core/tables.ts"
import type { MigrationStep } from "../../src/runtime/migrate.ts"
import { type AdapterName, layerFor, TestDatabase, type TestDatabaseApi } from "../support/databases.ts"

const T0 = 1_791_039_632_175
const SECOND = 1000
const MINUTE = 60 * SECOND

const realSleep = (ms: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

/**
 * Moves the TestClock from one registered sleep to the next until every fiber has ended (or
 * the clock reaches `stopAt`). While a fiber waits on a real database call it has no sleep
 * registered yet, so the clock stays put and the call is given real time to finish: the run
 * sees time advance exactly one poll at a time.
 */
const drive = (fibers: ReadonlyArray<Fiber.Fiber<unknown, unknown>>, stopAt = Number.POSITIVE_INFINITY) =>
  Effect.gen(function*() {
    // Real time spent with nothing asleep: only database calls should take any.
    let idle = 0
    while (true) {
      const exits = yield* Effect.forEach(fibers, Fiber.poll)
      if (exits.every(Option.isSome)) return
      const now = yield* Clock.currentTimeMillis
      if (now >= stopAt) return
      const next = Chunk.reduce(yield* TestClock.sleeps(), Number.POSITIVE_INFINITY, (a, b) => Math.min(a, b))
      if (Number.isFinite(next)) {
        idle = 0
        yield* TestClock.adjust(Math.min(Math.max(0, next - now), stopAt - now))
      } else if (++idle > 2_500) {
        return yield* Effect.dieMessage(
          "drive: no fiber is asleep, yet they have not ended (stuck, or waiting on something else)"
        )
      } else {
        yield* realSleep(2)
      }
    }
  })

/** Runs `effect` in a fiber, driving the TestClock until it ends; its result or error. */
const driven = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(effect)
    yield* drive([fiber])
    return yield* Fiber.join(fiber)
  })

/** leasehold's migrations, by id. */
const ALL_IDS = migrations.map((m) => m.id)
/** What one run at `t` records: every migration, applied at `t` (the TestClock does not move). */
const recordedAt = (t: number) => migrations.map(({ id, name }) => ({ id, name, appliedAt: t }))

const job = (priority: number, uniqueKey: string): NewJob => {
  const id = randomUUID()
  return {
    id,
    name: "t",
    queue: "default",
    payload: "{}",
    priority,
    maxRetries: 3,
    claimTimeout: 300,
    uniqueKey,
    runAt: T0,
    now: T0
  }
}

export const migrationConformance = (adapter: AdapterName) =>
  layer(layerFor(adapter, "mig"), { timeout: 120_000 })(`Migrations conformance on ${adapter}`, (it) => {
    /** A fresh prefix (so every test starts from an empty schema) and its table names. */
    const fresh = Effect.gen(function*() {
      const db = yield* TestDatabase
      const prefix = db.table("m") + "_"
      const tables = tableNames(prefix)
      // A LeaseLock on the migration lock table, to play another process holding it.
      const other = yield* db.leaseLock(tables.migrationLocks)
      return { db, prefix, tables, other }
    })

    const allTables = (
      t: ReturnType<typeof tableNames>
    ) => [
      t.jobs,
      t.hosts,
      t.jobLocks,
      tokensTable(t.jobLocks),
      t.migrations,
      t.migrationLocks,
      tokensTable(t.migrationLocks)
    ]

    // What migration 1 wrote had no grace or deadline; the in-memory store has no schema to upgrade.
    if (adapter !== "memory") {
      /** Inserts rows as code before migration 2 wrote them (no grace_ms, no stale_at). */
      const insertOld = (
        db: TestDatabaseApi,
        table: string,
        rows: ReadonlyArray<readonly [string, string, number | null, number | null, number]>
      ) =>
        Effect.forEach(rows, ([id, status, timeout, heartbeatAt, updatedAt]) =>
          db.query(
            `INSERT INTO ${
              db.quote(table)
            } (id, name, queue, payload, priority, status, attempts, max_retries, claim_timeout, claim_token, unique_key, heartbeat_at, run_at, created_at, updated_at) VALUES (?, 't', 'default', '{}', 0, ?, 1, 3, ?, ?, ?, ?, ?, ?, ?)`,
            [id, status, timeout, `tok-${id}`, id, heartbeatAt, T0, T0 - 2000 * SECOND, updatedAt]
          ), { discard: true })
      const onStore = <A, E>(db: TestDatabaseApi, prefix: string, f: (store: JobStoreApi) => Effect.Effect<A, E>) =>
        Effect.orDie(Effect.provide(Effect.flatMap(JobStore, f), db.storeLayer(prefix)))
      const rowsOf = (db: TestDatabaseApi, prefix: string, ids: ReadonlyArray<string>) =>
        onStore(db, prefix, (store) => Effect.forEach(ids, (id) => Effect.map(store.get(id), Option.getOrThrow)))

      it.effect("migration 2 on a database at migration 1: rows get core's grace and deadline, the reaper takes a silent row back exactly then, and a re-run keeps what changed since", () =>
        Effect.gen(function*() {
          const { db, prefix, tables } = yield* fresh
          yield* TestClock.setTime(T0)
          expect((yield* driven((yield* db.migrator({ prefix, migrations: [createJobTables] })).run)).applied)
            .toHaveLength(1)
          // id, status, claim timeout, heartbeat, last update
          const old = [
            ["pending-30", "pending", 30, null, T0],
            ["running-600", "processing", 600, T0 - 100 * SECOND, T0 - 1000 * SECOND],
            ["running-30", "processing", 30, null, T0],
            ["running-none", "processing", null, null, T0],
            ["done-300", "completed", 300, null, T0]
          ] as const
          yield* insertOld(db, tables.jobs, old)
          const m = yield* db.migrator({ prefix })
          expect((yield* driven(m.run)).applied.map((a) => a.id)).toEqual(ALL_IDS.slice(1))

          const rows = yield* rowsOf(db, prefix, old.map(([id]) => id))
          old.forEach(([, status, timeout, heartbeatAt, updatedAt], i) => {
            // no timeout: no grace of its own (a claim gives it the cap's or none)
            expect(rows[i]!.graceMs).toBe(timeout === null ? null : leaseWindowMs(timeout))
            // a running row's deadline: last seen + its window, the same as a lease taken then
            expect(rows[i]!.staleAt).toBe(
              status === "processing" ? leaseExpiresAt(heartbeatAt ?? updatedAt, timeout) : null
            )
          })
          const stale = (now: number) => onStore(db, prefix, (store) => store.stale(now, 10))
          const deadline = leaseExpiresAt(T0, 30)
          expect((yield* stale(deadline)).map((r) => r.id)).toEqual([])
          expect((yield* stale(deadline + 1)).map((r) => r.id)).toEqual(["running-30"])

          // A heartbeat moves a deadline; then a run that died after its steps but before
          // recording them runs the steps again, and must keep the new deadline.
          const beat = leaseExpiresAt(T0 + 50 * SECOND, 30)
          expect(yield* onStore(db, prefix, (s) => s.heartbeat("running-30", "tok-running-30", T0 + 50 * SECOND, beat)))
            .toBe(true)
          yield* db.query(`DELETE FROM ${db.quote(tables.migrations)} WHERE id = 2`)
          expect((yield* driven(m.run)).applied.map((a) => a.id)).toEqual([2])
          const again = yield* rowsOf(db, prefix, old.map(([id]) => id))
          expect(again.find((r) => r.id === "running-30")?.staleAt).toBe(beat)
          expect(again.filter((r) => r.id !== "running-30")).toEqual(rows.filter((r) => r.id !== "running-30"))
        }))

      it.effect("rows an older version writes after migration 2 (no grace, no deadline) are still reaped exactly a window after their last sign of life, never before", () =>
        Effect.gen(function*() {
          const { db, prefix, tables } = yield* fresh
          yield* TestClock.setTime(T0)
          yield* driven((yield* db.migrator({ prefix })).run)
          // claimed by an old worker: no deadline; one enqueued by an old process, then claimed here
          yield* insertOld(db, tables.jobs, [["old-claim", "processing", 30, null, T0]])
          yield* insertOld(db, tables.jobs, [["old-enqueue", "pending", 3600, null, T0]])
          yield* db.query(
            `UPDATE ${db.quote(tables.jobs)} SET attempts = 0, claim_token = NULL WHERE id = 'old-enqueue'`
          )
          const claimed = yield* onStore(db, prefix, (s) =>
            s.claim({
              queues: undefined,
              host: "h",
              now: T0,
              claimToken: "tok-new",
              timeoutCap: undefined,
              hostCap: undefined
            }))
          expect(claimed).toMatchObject({ _tag: "Claimed", job: { id: "old-enqueue", graceMs: null, staleAt: null } })
          const stale = (now: number) => onStore(db, prefix, (store) => store.stale(now, 10))
          expect((yield* stale(leaseExpiresAt(T0, 30))).map((r) => r.id)).toEqual([])
          const [row] = yield* stale(leaseExpiresAt(T0, 30) + 1)
          expect(row?.id).toBe("old-claim")
          // the 3600 s job is judged by its own timeout's window, not a default one
          expect((yield* stale(leaseExpiresAt(T0, 3600))).map((r) => r.id)).toEqual(["old-claim"])
          expect((yield* stale(leaseExpiresAt(T0, 3600) + 1)).map((r) => r.id).sort()).toEqual([
            "old-claim",
            "old-enqueue"
          ])
          // the reap is guarded by the last sign of life it read: a heartbeat since then wins
          const now = leaseExpiresAt(T0, 30) + 1
          yield* db.query(`UPDATE ${db.quote(tables.jobs)} SET heartbeat_at = ? WHERE id = 'old-claim'`, [now])
          const decision = { _tag: "Retry" as const, runAt: now }
          expect(yield* onStore(db, prefix, (s) => s.reap(row!, decision, now))).toBe(false)
          const reread = (yield* rowsOf(db, prefix, ["old-claim"]))[0]!
          expect(yield* onStore(db, prefix, (s) => s.reap(reread, decision, leaseExpiresAt(now, 30) + 1))).toBe(true)
          expect((yield* rowsOf(db, prefix, ["old-claim"]))[0]).toMatchObject({ status: "pending", staleAt: null })
        }))
    }

    it.effect("run creates every table and records migration 1; status creates nothing", () =>
      Effect.gen(function*() {
        const { db, prefix, tables } = yield* fresh
        yield* TestClock.setTime(T0)
        const m = yield* db.migrator({ prefix, host: "me" })
        expect(m.lockTable).toBe(tables.migrationLocks)

        const before = yield* m.status
        expect(before.applied).toEqual([])
        expect(before.pending).toEqual(migrations.map(({ id, name }) => ({ id, name })))
        expect(before.lock).toMatchObject({ held: false, expired: false, owner: null, host: null })
        for (const t of allTables(tables)) expect(yield* db.tableExists(t)).toBe(false)

        const result = yield* m.run
        expect(result.applied).toEqual(recordedAt(T0))
        for (const t of allTables(tables)) expect(yield* db.tableExists(t)).toBe(true)

        const after = yield* m.status
        expect(after.applied).toEqual(recordedAt(T0))
        expect(after.pending).toEqual([])
        // released at the end
        expect(after.lock).toMatchObject({ held: false, expired: false, owner: null })
      }))

    it.effect("a second run applies nothing and keeps the first record", () =>
      Effect.gen(function*() {
        const { db, prefix } = yield* fresh
        yield* TestClock.setTime(T0)
        const m = yield* db.migrator({ prefix, host: "me" })
        expect((yield* m.run).applied.map((a) => a.id)).toEqual(ALL_IDS)
        yield* TestClock.adjust(MINUTE)
        expect((yield* m.run).applied).toEqual([])
        // a new migrator (a later deploy) finds nothing to do either
        const later = yield* db.migrator({ prefix, host: "other" })
        expect((yield* later.run).applied).toEqual([])
        expect((yield* later.status).applied).toEqual(recordedAt(T0))
      }))

    it.effect("the migrated schema serves the job store: enqueue, unique keys, claim order, host cap, job leases", () =>
      Effect.gen(function*() {
        const { db, prefix } = yield* fresh
        yield* (yield* db.migrator({ prefix })).run
        yield* Effect.provide(
          Effect.gen(function*() {
            const store = yield* JobStore
            const low = job(0, "k-low")
            const high = job(5, "k-high")
            expect(yield* store.insert(low)).toEqual({ id: low.id, duplicate: false })
            expect(yield* store.insert(high)).toEqual({ id: high.id, duplicate: false })
            expect(yield* store.insert(job(9, "k-low"))).toEqual({ id: low.id, duplicate: true })
            const claim = { queues: undefined, host: "h1", now: T0, timeoutCap: undefined }
            const first = yield* store.claim({ ...claim, claimToken: randomUUID(), hostCap: 1 })
            expect(first).toMatchObject({
              _tag: "Claimed",
              job: { id: high.id, status: "processing", attempts: 1, claimedBy: "h1" }
            })
            expect(yield* store.claim({ ...claim, claimToken: randomUUID(), hostCap: 1 })).toMatchObject({
              _tag: "Capped"
            })
            expect(yield* store.claim({ ...claim, claimToken: randomUUID(), hostCap: undefined })).toMatchObject({
              _tag: "Claimed",
              job: { id: low.id }
            })
            yield* store.touchHost("h1", T0, { maxConcurrent: 1, codeVersion: "v1" })
            expect(Option.getOrThrow(yield* store.getHost("h1"))).toMatchObject({
              host: "h1",
              maxConcurrent: 1,
              draining: false,
              codeVersion: "v1"
            })
            const leases = yield* JobLeases
            expect(yield* leases.tryAcquire({ name: "job:t", owner: "o", now: T0, ttlMs: MINUTE })).toBe(true)
          }),
          db.storeLayer(prefix)
        )
      }))

    it.effect("two prefixes in one database each get their own indexes (the unique key holds in both)", () =>
      Effect.gen(function*() {
        const { db, prefix: a } = yield* fresh
        const { prefix: b } = yield* fresh
        yield* (yield* db.migrator({ prefix: a })).run
        yield* (yield* db.migrator({ prefix: b })).run
        for (const prefix of [a, b]) {
          yield* Effect.provide(
            Effect.gen(function*() {
              const store = yield* JobStore
              const original = job(0, "same-key")
              expect(yield* store.insert(original)).toEqual({ id: original.id, duplicate: false })
              expect(yield* store.insert(job(0, "same-key"))).toEqual({ id: original.id, duplicate: true })
            }),
            db.storeLayer(prefix)
          )
        }
      }))

    it.effect("two concurrent runs on separate connections: one applies while the other waits, each migration once, both succeed", () =>
      Effect.gen(function*() {
        const { db, prefix } = yield* fresh
        yield* TestClock.setTime(T0)
        const entered = yield* Ref.make<ReadonlyArray<string>>([])
        const holds = yield* Deferred.make<void>()
        const gate = yield* Deferred.make<void>()
        const onStep = (step: MigrationStep) =>
          Effect.gen(function*() {
            yield* Ref.update(entered, (e) => [...e, step.owner])
            yield* Deferred.succeed(holds, undefined)
            yield* Deferred.await(gate)
          })
        const [a, b] = yield* db.migratorsApart([{ prefix, host: "host-a", onStep }, {
          prefix,
          host: "host-b",
          onStep
        }])
        const runs = [yield* Effect.fork(a!.run), yield* Effect.fork(b!.run)]
        yield* Deferred.await(holds)
        // The winner is inside its first step; the other polls once a second meanwhile.
        yield* drive(runs, T0 + 5 * SECOND)
        const winner = yield* Ref.get(entered)
        expect(winner).toHaveLength(1)
        expect((yield* a!.status).lock).toMatchObject({ held: true, owner: winner[0] })
        expect(yield* Effect.forEach(runs, Fiber.poll)).toEqual([Option.none(), Option.none()])

        yield* Deferred.succeed(gate, undefined)
        yield* drive(runs)
        const results = yield* Effect.forEach(runs, Fiber.join)
        expect(results.flatMap((r) => r.applied.map((x) => x.id))).toEqual(ALL_IDS)
        expect(results.find((r) => r.applied.length > 0)?.owner).toBe(winner[0])
        // every step ran once, all of them by the winner
        expect(yield* Ref.get(entered)).toEqual(ALL_IDS.map(() => winner[0]))
        const status = yield* b!.status
        expect(status.applied.map((x) => x.id)).toEqual(ALL_IDS)
        expect(status.lock.held).toBe(false)
      }))

    it.effect("a held, unexpired lock makes run wait the timeout, polling, then fail naming the holder and the unlock command", () =>
      Effect.gen(function*() {
        const { db, prefix, tables, other } = yield* fresh
        yield* TestClock.setTime(T0)
        yield* other.ensureTable
        expect(
          yield* other.tryAcquire({ name: "migrate", owner: "other-owner", host: "other-host", ttlMs: 10 * MINUTE })
        ).toBe(true)
        const m = yield* db.migrator({ prefix, host: "me" })

        const error = yield* driven(Effect.flip(m.run))
        expect(error._tag).toBe("MigrationLockTimeoutError")
        if (error._tag !== "MigrationLockTimeoutError") return
        expect(error).toMatchObject({
          table: tables.migrationLocks,
          owner: "other-owner",
          host: "other-host",
          expiresAt: T0 + 10 * MINUTE,
          timeoutMs: MINUTE,
          unlockCommand: "leasehold migrate unlock"
        })
        expect(error.waitedMs).toBeGreaterThanOrEqual(MINUTE)
        expect(error.waitedMs).toBeLessThan(MINUTE + SECOND)
        expect(yield* Clock.currentTimeMillis).toBeGreaterThanOrEqual(T0 + MINUTE)
        expect(error.message).toContain("other-host")
        expect(error.message).toContain("leasehold migrate unlock")
        // nothing applied, and the holder's lease untouched
        expect(yield* db.tableExists(tables.jobs)).toBe(false)
        expect((yield* m.status).pending.map((p) => p.id)).toEqual(ALL_IDS)
        expect(Option.getOrThrow(yield* other.read("migrate"))).toMatchObject({
          owner: "other-owner",
          expiresAt: T0 + 10 * MINUTE
        })
      }))

    it.effect("a waiting run takes the lock once the holder releases it", () =>
      Effect.gen(function*() {
        const { db, prefix, other } = yield* fresh
        yield* TestClock.setTime(T0)
        yield* other.ensureTable
        expect(
          yield* other.tryAcquire({ name: "migrate", owner: "other-owner", host: "other-host", ttlMs: 10 * MINUTE })
        ).toBe(true)
        const m = yield* db.migrator({ prefix, host: "me", lockTimeout: "2 minutes" })
        const run = yield* Effect.fork(m.run)
        yield* drive([run], T0 + 30 * SECOND)
        expect(yield* Fiber.poll(run)).toEqual(Option.none())
        expect(yield* other.release({ name: "migrate", owner: "other-owner" })).toBe(true)
        yield* drive([run])
        const result = yield* Fiber.join(run)
        expect(result.applied.map((a) => a.id)).toEqual(ALL_IDS)
        // it applied within one poll of the release, long before its timeout
        expect(result.applied[0]!.appliedAt).toBeLessThanOrEqual(T0 + 31 * SECOND)
      }))

    it.effect("an expired lock is taken over at once and run succeeds; the old owner can no longer renew it", () =>
      Effect.gen(function*() {
        const { db, prefix, other } = yield* fresh
        yield* TestClock.setTime(T0)
        yield* other.ensureTable
        expect(
          yield* other.tryAcquire({
            name: "migrate",
            owner: "dead",
            host: "dead-host",
            now: T0 - 2 * MINUTE,
            ttlMs: MINUTE
          })
        ).toBe(true)
        const seen = yield* Ref.make(
          Option.none<{ readonly owner: string; readonly holder: string | null; readonly host: string | null }>()
        )
        const m = yield* db.migrator({
          prefix,
          host: "me",
          onStep: (step) =>
            Effect.flatMap(
              Effect.orDie(other.read("migrate")),
              (row) =>
                Ref.set(
                  seen,
                  Option.some({
                    owner: step.owner,
                    holder: Option.getOrThrow(row).owner,
                    host: Option.getOrThrow(row).host
                  })
                )
            )
        })
        const result = yield* driven(m.run)
        expect(result.applied.map((a) => a.id)).toEqual(ALL_IDS)
        expect(yield* Clock.currentTimeMillis).toBe(T0) // no waiting
        const during = Option.getOrThrow(yield* Ref.get(seen))
        expect(during).toEqual({ owner: result.owner, holder: result.owner, host: "me" })
        expect(yield* other.renew({ name: "migrate", owner: "dead", ttlMs: MINUTE })).toBe(false)
        expect(yield* other.read("migrate")).toEqual(Option.none())
      }))

    it.effect("renewal before a step finds a stolen lock: MigrationLockLostError, nothing applied, the thief's row survives", () =>
      Effect.gen(function*() {
        const { db, prefix, tables, other } = yield* fresh
        yield* TestClock.setTime(T0)
        const stolen = yield* Ref.make(false)
        const m = yield* db.migrator({
          prefix,
          host: "me",
          lockTtl: MINUTE,
          // Another process, whose clock is past our lease's expiry, takes it over.
          onStep: () =>
            Effect.flatMap(
              Effect.orDie(
                other.tryAcquire({
                  name: "migrate",
                  owner: "thief",
                  host: "thief-host",
                  now: T0 + MINUTE + 1,
                  ttlMs: 10 * MINUTE
                })
              ),
              (took) => Ref.set(stolen, took)
            )
        })
        const error = yield* driven(Effect.flip(m.run))
        expect(yield* Ref.get(stolen)).toBe(true)
        expect(error._tag).toBe("MigrationLockLostError")
        if (error._tag !== "MigrationLockLostError") return
        expect(error).toMatchObject({
          table: tables.migrationLocks,
          holder: "thief",
          holderHost: "thief-host",
          migrationId: 1
        })
        expect(error.owner).not.toBe("thief")
        expect(Option.getOrThrow(yield* other.read("migrate"))).toMatchObject({ owner: "thief", host: "thief-host" })
        expect(yield* db.tableExists(tables.jobs)).toBe(false)
        const status = yield* m.status
        expect(status.applied).toEqual([])
        expect(status.pending.map((p) => p.id)).toEqual(ALL_IDS)
        expect(status.lock).toMatchObject({ held: true, owner: "thief" })
      }))

    it.effect("the lease is renewed before every step (expiry moves with the clock; acquiredAt stays)", () =>
      Effect.gen(function*() {
        const { db, prefix, other } = yield* fresh
        yield* TestClock.setTime(T0)
        const noop: Migration = { id: 2, name: "no-op", statements: () => [], memoryTables: () => [] }
        const rows = yield* Ref.make<
          ReadonlyArray<{ readonly step: number; readonly acquiredAt: number; readonly expiresAt: number }>
        >([])
        const m = yield* db.migrator({
          prefix,
          host: "me",
          lockTtl: MINUTE,
          migrations: [createJobTables, noop],
          onStep: (step) =>
            Effect.gen(function*() {
              const row = Option.getOrThrow(yield* Effect.orDie(other.read("migrate")))
              yield* Ref.update(
                rows,
                (r) => [...r, { step: step.migration.id, acquiredAt: row.acquiredAt, expiresAt: row.expiresAt }]
              )
              // each step takes 40 s: without renewal the lease would have expired by step 2's end
              yield* TestClock.adjust(40 * SECOND)
            })
        })
        const result = yield* driven(m.run)
        expect(result.applied.map((a) => a.id)).toEqual([1, 2])
        expect(yield* Ref.get(rows)).toEqual([
          { step: 1, acquiredAt: T0, expiresAt: T0 + MINUTE },
          // renewed at T0 + 40 s, before step 1 ran
          { step: 2, acquiredAt: T0, expiresAt: T0 + 40 * SECOND + MINUTE }
        ])
        expect(result.applied[1]!.appliedAt).toBe(T0 + 80 * SECOND)
      }))

    it.effect("status reports held, expired, owner, host, heldForMs and expiresInMs (expiry is strict)", () =>
      Effect.gen(function*() {
        const { db, prefix, other } = yield* fresh
        yield* TestClock.setTime(T0)
        const m = yield* db.migrator({ prefix, host: "me", lockTtl: MINUTE })
        // fresh database: no tables at all, a free lock
        expect((yield* m.status).lock).toEqual({
          held: false,
          expired: false,
          owner: null,
          host: null,
          acquiredAt: null,
          expiresAt: null,
          heldForMs: null,
          expiresInMs: null
        })

        // during our own run
        const during = yield* Ref.make(Option.none<unknown>())
        const watched = yield* db.migrator({
          prefix,
          host: "me",
          lockTtl: MINUTE,
          onStep: (step) =>
            Effect.flatMap(
              Effect.orDie(m.status),
              (s) => Ref.set(during, Option.some({ owner: step.owner, lock: s.lock }))
            )
        })
        const result = yield* watched.run
        expect(Option.getOrThrow(yield* Ref.get(during))).toEqual({
          owner: result.owner,
          lock: {
            held: true,
            expired: false,
            owner: result.owner,
            host: "me",
            acquiredAt: T0,
            expiresAt: T0 + MINUTE,
            heldForMs: 0,
            expiresInMs: MINUTE
          }
        })

        // held by another process for 5 s
        expect(
          yield* other.tryAcquire({
            name: "migrate",
            owner: "o",
            host: "h",
            now: T0 - 5 * SECOND,
            expiresAt: T0 + 55 * SECOND
          })
        ).toBe(true)
        expect((yield* m.status).lock).toEqual({
          held: true,
          expired: false,
          owner: "o",
          host: "h",
          acquiredAt: T0 - 5 * SECOND,
          expiresAt: T0 + 55 * SECOND,
          heldForMs: 5 * SECOND,
          expiresInMs: 55 * SECOND
        })
        yield* TestClock.adjust(55 * SECOND)
        expect((yield* m.status).lock).toMatchObject({ held: true, expired: false, expiresInMs: 0 })
        yield* TestClock.adjust(1)
        expect((yield* m.status).lock).toMatchObject({
          held: false,
          expired: true,
          owner: "o",
          heldForMs: MINUTE + 1,
          expiresInMs: -1
        })
      }))

    it.effect("unlock removes only an expired lease; with force, a live one too", () =>
      Effect.gen(function*() {
        const { db, prefix, other } = yield* fresh
        yield* TestClock.setTime(T0)
        const m = yield* db.migrator({ prefix, host: "me" })
        // nothing there (not even the table)
        expect(yield* m.unlock()).toMatchObject({ removed: false, lock: { held: false, owner: null } })

        yield* other.ensureTable
        expect(yield* other.tryAcquire({ name: "migrate", owner: "live", host: "h", ttlMs: MINUTE })).toBe(true)
        expect(yield* m.unlock()).toMatchObject({ removed: false, lock: { held: true, owner: "live" } })
        expect(yield* other.ownerOf("migrate")).toEqual(Option.some("live"))
        // at the very millisecond of expiry it is still live
        yield* TestClock.adjust(MINUTE)
        expect((yield* m.unlock()).removed).toBe(false)
        yield* TestClock.adjust(1)
        expect(yield* m.unlock()).toMatchObject({ removed: true, lock: { expired: true, owner: "live" } })
        expect(yield* other.ownerOf("migrate")).toEqual(Option.none())

        expect(yield* other.tryAcquire({ name: "migrate", owner: "live2", host: "h", ttlMs: MINUTE })).toBe(true)
        expect(yield* m.unlock({ force: true })).toMatchObject({ removed: true, lock: { held: true, owner: "live2" } })
        expect(yield* other.ownerOf("migrate")).toEqual(Option.none())
        // and a run then proceeds at once
        expect((yield* m.run).applied.map((a) => a.id)).toEqual(ALL_IDS)
      }))

    it.effect("the migration lock's statements target its own table, not the job lock table", () =>
      Effect.gen(function*() {
        const { db, prefix, tables } = yield* fresh
        yield* TestClock.setTime(T0)
        const jobLocks = yield* db.leaseLock(tables.jobLocks)
        const migrationLocks = yield* db.leaseLock(tables.migrationLocks)
        // a live job lease that happens to be named "migrate"
        yield* jobLocks.ensureTable
        expect(
          yield* jobLocks.tryAcquire({ name: "migrate", owner: "job-owner", host: "job-host", ttlMs: 10 * MINUTE })
        ).toBe(true)

        const during = yield* Ref.make(
          Option.none<{ readonly ours: Option.Option<string>; readonly job: Option.Option<string> }>()
        )
        const m = yield* db.migrator({
          prefix,
          host: "me",
          onStep: () =>
            Effect.gen(function*() {
              const ours = yield* Effect.orDie(migrationLocks.ownerOf("migrate"))
              const job = yield* Effect.orDie(jobLocks.ownerOf("migrate"))
              yield* Ref.set(during, Option.some({ ours, job }))
            })
        })
        expect(m.lockTable).toBe(tables.migrationLocks)
        expect(m.lockTable).not.toBe(tables.jobLocks)
        expect((yield* m.status).lock.held).toBe(false)
        const result = yield* driven(m.run)
        expect(yield* Clock.currentTimeMillis).toBe(T0) // it did not wait for the job lease
        expect(Option.getOrThrow(yield* Ref.get(during))).toEqual({
          ours: Option.some(result.owner),
          job: Option.some("job-owner")
        })
        expect(yield* migrationLocks.ownerOf("migrate")).toEqual(Option.none())
        expect(yield* jobLocks.ownerOf("migrate")).toEqual(Option.some("job-owner"))
        // unlock --force clears the migration lock only
        expect(yield* m.unlock({ force: true })).toMatchObject({ removed: false })
        expect(yield* jobLocks.ownerOf("migrate")).toEqual(Option.some("job-owner"))
      }))

    it.effect("run inside a transaction refuses (DDL would commit it) and creates nothing", () =>
      Effect.gen(function*() {
        const { db, prefix, tables } = yield* fresh
        const m = yield* db.migrator({ prefix })
        const error = yield* Effect.flip(db.withTransaction(m.run))
        expect(error).toMatchObject({ _tag: "MigrationInTransactionError", table: tables.migrations })
        for (const t of allTables(tables)) expect(yield* db.tableExists(t)).toBe(false)
        expect(Exit.isSuccess(yield* Effect.exit(m.run))).toBe(true)
      }))
  })
