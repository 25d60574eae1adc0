/**
 * Fencing tokens and guarded writes (docs/behaviour.md §2, "Fencing tokens") on every adapter:
 * every acquisition's token is strictly greater than every earlier one of its name, under races,
 * after releases and take-overs; `Fences.guard` applies a write only for a token at least the
 * highest its resource has seen, atomically with the write; and a paused job attempt whose lease
 * was taken over is refused by the guard when it resumes. TestClock drives time.
 */
import { expect, layer } from "@effect/vitest"
import { Deferred, Effect, Either, Fiber, Option, Ref, Schema, TestClock } from "effect"
import { leaseWindowSeconds } from "../../src/core/lease.ts"
import { define, enqueue, type HeldLease, JobContext } from "../../src/runtime/Job.ts"
import { processNext } from "../../src/runtime/Worker.ts"
import { type AdapterName, layerFor, TestDatabase } from "../support/databases.ts"
import { eventually, skewed, withJobs } from "../support/jobs.ts"

const T0 = 1_791_039_632_175
const MINUTE = 60_000
const WINDOW = leaseWindowSeconds(3600) * 1000

export const fencingConformance = (adapter: AdapterName) =>
  layer(layerFor(adapter, "fn"), { timeout: 180_000 })(`Fencing conformance on ${adapter}`, (it) => {
    const freshLock = Effect.gen(function*() {
      const db = yield* TestDatabase
      const lock = yield* db.leaseLock(db.table("locks"))
      yield* lock.ensureTable
      return lock
    })
    const freshFences = Effect.gen(function*() {
      const db = yield* TestDatabase
      const fences = yield* db.fences(db.table("fences"))
      yield* fences.ensureTable
      return fences
    })

    it.effect("50-way races, fresh and take-over, on separate connections: one winner each, tokens distinct and increasing", () =>
      Effect.gen(function*() {
        const db = yield* TestDatabase
        const table = db.table("race")
        yield* Effect.flatMap(db.leaseLock(table), (l) => l.ensureTable)
        const locks = yield* db.leaseLocksApart(table, 50)
        const tokens: Array<bigint> = []
        let now = T0
        for (let round = 0; round < 6; round++) {
          // Round 0 races for a free name; later rounds for the winner's expired lease, and round
          // 3 after the winner released it (its row deleted).
          if (round === 3) {
            const holder = Option.getOrThrow(yield* locks[0]!.read("hot"))
            expect(yield* locks[0]!.release({ name: "hot", owner: holder.owner })).toBe(true)
          }
          const results = yield* Effect.all(
            locks.map((lock, i) =>
              lock.tryAcquireToken({ name: "hot", owner: `r${round}-${i}`, now, expiresAt: now + 1000 })
            ),
            { concurrency: "unbounded" }
          )
          const won = results.flatMap((r, i) => (Option.isSome(r) ? [{ i, token: r.value }] : []))
          expect(won).toHaveLength(1)
          expect(yield* locks[1]!.ownerOf("hot")).toEqual(Option.some(`r${round}-${won[0]!.i}`))
          tokens.push(won[0]!.token)
          now += 5000
        }
        for (let i = 1; i < tokens.length; i++) expect(tokens[i]! > tokens[i - 1]!).toBe(true)
        expect(new Set(tokens).size).toBe(tokens.length)
      }))

    // Each call's clock is 10 ms past the last one's and its lease lasts 5 ms, so every call may
    // take over whatever lease it finds, and half the holders release (the next call inserts):
    // inserts, duplicate keys and take-overs race at once. An acquisition must get a token of its
    // own even when the database rolls its transaction back midway (a deadlock, or on Galera a
    // write set from another node) and it runs again. A call the database keeps refusing (a
    // SqlError after every retry) holds nothing and is left out.
    it.effect("12 acquirers churning one name (take-overs, inserts, releases) on separate connections: no two acquisitions share a token", () =>
      Effect.gen(function*() {
        const db = yield* TestDatabase
        const table = db.table("churn")
        yield* Effect.flatMap(db.leaseLock(table), (l) => l.ensureTable)
        const locks = yield* db.leaseLocksApart(table, 12)
        const won: Array<{ readonly owner: string; readonly token: bigint }> = []
        let clock = T0
        yield* Effect.all(
          locks.map((lock, i) =>
            Effect.gen(function*() {
              for (let k = 0; k < 40; k++) {
                const owner = `a${i}-${k}`
                const now = (clock += 10)
                const token = yield* Effect.catchTag(
                  lock.tryAcquireToken({ name: "hot", owner, now, expiresAt: now + 5 }),
                  "SqlError",
                  () => Effect.succeedNone
                )
                if (Option.isNone(token)) continue
                won.push({ owner, token: token.value })
                if (k % 2 === 0) yield* Effect.ignore(lock.release({ name: "hot", owner }))
              }
            })
          ),
          { concurrency: "unbounded" }
        )
        const owners = new Map<bigint, Array<string>>()
        for (const w of won) owners.set(w.token, [...(owners.get(w.token) ?? []), w.owner])
        expect([...owners].filter(([, o]) => o.length > 1)).toEqual([])
        expect(won.length).toBeGreaterThan(0)
      }))

    it.effect("a lease already ours keeps its token; every acquisition bumps it, tryAcquire's too; names count apart", () =>
      Effect.gen(function*() {
        const lock = yield* freshLock
        const first = Option.getOrThrow(
          yield* lock.tryAcquireToken({ name: "n", owner: "a", now: T0, expiresAt: T0 + MINUTE })
        )
        expect(first >= 1n).toBe(true)
        expect(yield* lock.tryAcquireToken({ name: "n", owner: "a", now: T0 + 1, expiresAt: T0 + MINUTE }))
          .toEqual(Option.some(first))
        expect(yield* lock.tryAcquireToken({ name: "n", owner: "b", now: T0 + 1, expiresAt: T0 + MINUTE }))
          .toEqual(Option.none())
        expect(yield* lock.release({ name: "n", owner: "a" })).toBe(true)
        // the boolean form is an acquisition too
        expect(yield* lock.tryAcquire({ name: "n", owner: "b", now: T0 + 2, expiresAt: T0 + MINUTE })).toBe(true)
        expect(yield* lock.release({ name: "n", owner: "b" })).toBe(true)
        const third = Option.getOrThrow(
          yield* lock.tryAcquireToken({ name: "n", owner: "c", now: T0 + 3, expiresAt: T0 + MINUTE })
        )
        expect(third).toBe(first + 2n)
        // our own expired lease, taken again, is a new acquisition
        const again = Option.getOrThrow(
          yield* lock.tryAcquireToken({ name: "n", owner: "c", now: T0 + MINUTE + 1, expiresAt: T0 + 2 * MINUTE })
        )
        expect(again).toBe(third + 1n)
        // another name has its own counter
        expect(yield* lock.tryAcquireToken({ name: "m", owner: "a", now: T0, expiresAt: T0 + MINUTE }))
          .toEqual(Option.some(1n))
      }))

    it.effect("a token taken inside a transaction that rolls back is not spent", () =>
      Effect.gen(function*() {
        const db = yield* TestDatabase
        const lock = yield* freshLock
        const first = yield* lock.tryAcquireToken({ name: "n", owner: "a", now: T0, expiresAt: T0 + 1 })
        const rolledBack = yield* Effect.either(db.withTransaction(Effect.gen(function*() {
          expect(yield* lock.tryAcquireToken({ name: "n", owner: "b", now: T0 + 2, expiresAt: T0 + 3 }))
            .toEqual(Option.some(Option.getOrThrow(first) + 1n))
          return yield* Effect.fail("boom" as const)
        })))
        expect(rolledBack).toEqual(Either.left("boom"))
        expect(yield* lock.ownerOf("n")).toEqual(Option.some("a"))
        expect(yield* lock.tryAcquireToken({ name: "n", owner: "c", now: T0 + 2, expiresAt: T0 + 3 }))
          .toEqual(Option.some(Option.getOrThrow(first) + 1n))
      }))

    it.effect("ensureTable creates the token counters beside an existing lease table", () =>
      Effect.gen(function*() {
        const db = yield* TestDatabase
        const lock = yield* freshLock
        yield* db.dropTable(`${lock.table}_tokens`)
        expect(yield* db.tableExists(`${lock.table}_tokens`)).toBe(false)
        expect(lock.createTableSql).toContain(`${lock.table}_tokens`)
        yield* lock.ensureTable
        expect(yield* db.tableExists(`${lock.table}_tokens`)).toBe(true)
        expect(yield* lock.tryAcquireToken({ name: "n", owner: "a", now: T0, ttlMs: MINUTE })).toEqual(Option.some(1n))
      }))

    it.effect("guard: a token at least the highest seen writes and is recorded; a lower one is refused and its write never runs", () =>
      Effect.gen(function*() {
        const fences = yield* freshFences
        const writes = yield* Ref.make<ReadonlyArray<bigint>>([])
        const write = (token: bigint) =>
          fences.guard({ resource: "account:1", token }, Ref.update(writes, (w) => [...w, token]))
        expect(yield* fences.highest("account:1")).toEqual(Option.none())
        yield* write(5n)
        yield* write(5n) // the same holder writes again
        const stale = yield* Effect.flip(write(4n))
        expect(stale._tag).toBe("StaleTokenError")
        if (stale._tag === "StaleTokenError") {
          expect(stale).toMatchObject({ resource: "account:1", token: 4n, highest: 5n })
          expect(stale.message).toContain("account:1")
        }
        yield* write(7n)
        expect(yield* Ref.get(writes)).toEqual([5n, 5n, 7n])
        expect(yield* fences.highest("account:1")).toEqual(Option.some(7n))
        // resources are fenced apart
        yield* fences.guard({ resource: "account:2", token: 1n }, Effect.void)
        expect(yield* fences.highest("account:2")).toEqual(Option.some(1n))
      }))

    it.effect("guard: a failed write, or a caller's transaction that rolls back, records nothing", () =>
      Effect.gen(function*() {
        const db = yield* TestDatabase
        const fences = yield* freshFences
        yield* fences.guard({ resource: "r", token: 3n }, Effect.void)
        expect(yield* Effect.flip(fences.guard({ resource: "r", token: 9n }, Effect.fail("write failed" as const))))
          .toBe("write failed")
        expect(yield* fences.highest("r")).toEqual(Option.some(3n))
        const outer = yield* Effect.either(db.withTransaction(
          Effect.zipRight(fences.guard({ resource: "r", token: 8n }, Effect.void), Effect.fail("later" as const))
        ))
        expect(outer).toEqual(Either.left("later"))
        expect(yield* fences.highest("r")).toEqual(Option.some(3n))
        // inside a transaction that commits, it is recorded
        yield* db.withTransaction(fences.guard({ resource: "r", token: 8n }, Effect.void))
        expect(yield* fences.highest("r")).toEqual(Option.some(8n))
      }))

    it.effect("guard: bad input fails with FenceInputError and writes nothing", () =>
      Effect.gen(function*() {
        const fences = yield* freshFences
        const ran = yield* Ref.make(0)
        const write = Ref.update(ran, (n) => n + 1)
        const bad = [
          { resource: "", token: 1n },
          { resource: "x".repeat(256), token: 1n },
          { resource: "trailing ", token: 1n },
          { resource: "nul\u0000", token: 1n },
          { resource: "r", token: -1n },
          { resource: "r", token: 2n ** 53n }
        ]
        for (const input of bad) {
          const error = yield* Effect.flip(fences.guard(input, write))
          expect(error._tag).toBe("FenceInputError")
        }
        expect(yield* Ref.get(ran)).toBe(0)
        expect(yield* fences.highest("r")).toEqual(Option.none())
        // 255 characters and 2^53 - 1 fit
        yield* fences.guard({ resource: "x".repeat(255), token: 2n ** 53n - 1n }, write)
        expect(yield* fences.highest("x".repeat(255))).toEqual(Option.some(2n ** 53n - 1n))
      }))

    // On a Galera cluster a guard may run its write and then be refused at COMMIT (another node
    // wrote the row first) and run again whole: only the last run of a guard that succeeded was
    // committed, and those are the writes that must come in token order.
    it.effect("guard: 20 concurrent writers with shuffled tokens apply in non-decreasing token order", () =>
      Effect.gen(function*() {
        const fences = yield* freshFences
        const runs = yield* Ref.make<ReadonlyArray<number>>([])
        const tokens = Array.from({ length: 20 }, (_, i) => BigInt(((i * 7) % 20) + 1))
        const results = yield* Effect.all(
          tokens.map((token, i) =>
            Effect.either(fences.guard({ resource: "hot", token }, Ref.update(runs, (r) => [...r, i])))
          ),
          { concurrency: "unbounded" }
        )
        const ran = yield* Ref.get(runs)
        const order = ran.filter((i, at) => Either.isRight(results[i]!) && ran.lastIndexOf(i) === at).map((i) =>
          tokens[i]!
        )
        for (let i = 1; i < order.length; i++) expect(order[i]! >= order[i - 1]!).toBe(true)
        expect(order).toContain(20n)
        expect(results.filter(Either.isRight)).toHaveLength(order.length)
        expect(results.filter(Either.isLeft).every((e) => e.left._tag === "StaleTokenError")).toBe(true)
        expect(yield* fences.highest("hot")).toEqual(Option.some(20n))
      }))

    it.effect("a paused attempt whose lease was taken over is refused by the guard when it resumes; the new holder's write stands", () =>
      Effect.gen(function*() {
        const fences = yield* freshFences
        const gate = yield* Deferred.make<void>()
        const started = yield* Deferred.make<void>()
        const outcomes = yield* Ref.make<
          ReadonlyArray<{ readonly n: number; readonly token: bigint; readonly ok: boolean }>
        >([])
        const Sync = define({
          name: "FencedSync",
          schema: Schema.Struct({ n: Schema.Number }),
          concurrencyKey: "ledger",
          perform: ({ n }) =>
            Effect.gen(function*() {
              const ctx = yield* JobContext
              const lease: HeldLease = Option.getOrThrow(yield* ctx.lease)
              if (n === 1) {
                yield* Deferred.succeed(started, undefined)
                yield* Deferred.await(gate) // paused (a GC pause, a stopped VM) past its lease window
              }
              const written = yield* Effect.either(
                fences.guard({ resource: "ledger", token: lease.fencingToken }, Effect.void)
              )
              yield* Ref.update(
                outcomes,
                (o) => [...o, { n, token: lease.fencingToken, ok: Either.isRight(written) }]
              )
            })
        })
        yield* withJobs(
          [Sync],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const { id } = yield* enqueue(Sync, { n: 1 })
            const paused = yield* Effect.fork(processNext({ host: "host-1" }))
            yield* Deferred.await(started)
            // The paused worker's clock stands still (so its attempt's timer does not fire); for
            // another worker it is past the lease window: it runs the next job on the key, taking
            // the expired lease over, and writes first.
            yield* enqueue(Sync, { n: 2 })
            expect(yield* skewed(WINDOW + 1, processNext({ host: "host-2" }))).toMatchObject({ _tag: "Completed" })
            yield* Deferred.succeed(gate, undefined)
            // its run is reported (its row may have been reaped meanwhile: then it is fenced too)
            expect(yield* Fiber.join(paused)).toMatchObject({ job: { id }, leaseLost: true })
            const [second, first] = yield* Ref.get(outcomes)
            expect(second).toMatchObject({ n: 2, ok: true })
            expect(first).toMatchObject({ n: 1, ok: false })
            expect(second!.token > first!.token).toBe(true)
            expect(yield* fences.highest("ledger")).toEqual(Option.some(second!.token))
          })
        )
      }))

    it.effect("concurrencyLimit 3: in a 30-way race at most 3 run at once (from recorded start and end), each on its own slot with its own token; all 30 complete", () =>
      Effect.gen(function*() {
        const seq = yield* Ref.make(0)
        const gate = yield* Deferred.make<void>()
        const runs = yield* Ref.make<
          ReadonlyArray<
            {
              readonly n: number
              readonly start: number
              readonly end: number
              readonly slot: string
              readonly token: bigint
            }
          >
        >([])
        const running = yield* Ref.make(0)
        const Pooled = define({
          name: "Pooled",
          schema: Schema.Struct({ n: Schema.Number }),
          concurrencyKey: "pool",
          concurrencyLimit: 3,
          perform: ({ n }) =>
            Effect.gen(function*() {
              const lease = Option.getOrThrow(yield* (yield* JobContext).lease)
              const start = yield* Ref.getAndUpdate(seq, (x) => x + 1)
              yield* Ref.update(running, (x) => x + 1)
              yield* Deferred.await(gate)
              yield* Effect.yieldNow()
              yield* Ref.update(running, (x) => x - 1)
              const end = yield* Ref.getAndUpdate(seq, (x) => x + 1)
              yield* Ref.update(runs, (r) => [...r, { n, start, end, slot: lease.name, token: lease.fencingToken }])
            })
        })
        yield* withJobs(
          [Pooled],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            for (let n = 0; n < 30; n++) yield* enqueue(Pooled, { n })
            // 30 workers at once while the first runs are held: 3 start, 27 find every slot busy
            const fibers = yield* Effect.forEach(
              Array.from({ length: 30 }, (_, i) => i),
              (i) => Effect.fork(processNext({ host: `host-${i}` }))
            )
            yield* eventually(Effect.map(
              Effect.forEach(fibers, (f) => Effect.map(f.poll, Option.isSome)),
              (done) => done.filter(Boolean).length === 27
            ))
            expect(yield* Ref.get(running)).toBe(3)
            yield* Deferred.succeed(gate, undefined)
            const first = yield* Effect.forEach(fibers, Fiber.join)
            expect(first.filter((r) => r._tag === "Completed")).toHaveLength(3)
            expect(first.filter((r) => r._tag === "Deferred")).toHaveLength(27)
            const firstSlots = (yield* Ref.get(runs)).map((r) => r.slot).sort()
            expect(firstSlots).toEqual(["key:pool", "key:pool#2", "key:pool#3"])
            // then 30 workers at a time, until every job ran
            for (let round = 0; round < 40 && (yield* Ref.get(runs)).length < 30; round++) {
              yield* Effect.all(
                Array.from({ length: 30 }, (_, i) => processNext({ host: `host-${i}` })),
                { concurrency: "unbounded" }
              )
              yield* TestClock.adjust(31_000)
            }
            const all = yield* Ref.get(runs)
            expect(all.map((r) => r.n).sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, n) => n))
            // the most runs in progress at any point, from the recorded starts and ends
            const events = all.flatMap((r) => [{ at: r.start, d: 1 }, { at: r.end, d: -1 }]).sort((a, b) => a.at - b.at)
            let now = 0
            let most = 0
            for (const e of events) most = Math.max(most, now += e.d)
            expect(most).toBe(3)
            // each acquisition of a slot has a token of its own
            expect(new Set(all.map((r) => `${r.slot} ${r.token}`)).size).toBe(30)
            expect(new Set(all.map((r) => r.slot))).toEqual(new Set(["key:pool", "key:pool#2", "key:pool#3"]))
          })
        )
      }))

    it("concurrencyLimit: 1 to 1000, and only with a key or exclusive", () => {
      const base = { name: "L", schema: Schema.Struct({}), perform: () => Effect.void }
      for (const concurrencyLimit of [0, -1, 1.5, 1001, Number.NaN]) {
        expect(() => define({ ...base, concurrencyKey: "k", concurrencyLimit })).toThrow(/concurrencyLimit/)
      }
      expect(() => define({ ...base, concurrencyLimit: 2 })).toThrow(/needs exclusive/)
      expect(define({ ...base, exclusive: true, concurrencyLimit: 2 }).concurrencyLimit).toBe(2)
      expect(define(base).concurrencyLimit).toBe(1)
    })
  })
