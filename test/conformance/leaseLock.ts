/**
 * LeaseLock conformance: every adapter (postgres, mysql, sqlite, memory) must pass all of it.
 * docs/behaviour.md §2 and §11 (LeaseLock), plus concurrency, transactions and odd input.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Either, Option, TestClock } from "effect"
import { type AdapterName, layerFor, TestDatabase } from "../support/databases.ts"

const T0 = 1_791_039_632_175
const MINUTE = 60_000

const ODD_STRINGS = [
  `it's "quoted"`,
  "semi; DROP TABLE users; --",
  "back\\slash \\' \\\" end\\",
  "ünïcødé — 名前 — 🚀",
  "tab\tnew\nline",
  "%_ like wildcards _%"
]

export const leaseLockConformance = (adapter: AdapterName) =>
  layer(layerFor(adapter, "ll"), { timeout: 120_000 })(`LeaseLock conformance on ${adapter}`, (it) => {
    const freshLock = (label = "locks") =>
      Effect.gen(function*() {
        const db = yield* TestDatabase
        const lock = yield* db.leaseLock(db.table(label))
        yield* lock.ensureTable
        return lock
      })

    it.effect("one owner takes a free lease, and no other until it is released", () =>
      Effect.gen(function*() {
        const lock = yield* freshLock()
        const lease = { name: "report", now: T0, expiresAt: T0 + MINUTE }
        expect(yield* lock.tryAcquire({ ...lease, owner: "a", host: "host-a" })).toBe(true)
        expect(yield* lock.tryAcquire({ ...lease, owner: "b", host: "host-b" })).toBe(false)
        expect(yield* lock.ownerOf("report")).toEqual(Option.some("a"))
        // b cannot release or renew a's lease
        expect(yield* lock.release({ name: "report", owner: "b" })).toBe(false)
        expect(yield* lock.renew({ name: "report", owner: "b", expiresAt: T0 + 10 * MINUTE })).toBe(false)
        expect(yield* lock.release({ name: "report", owner: "a" })).toBe(true)
        expect(yield* lock.ownerOf("report")).toEqual(Option.none())
        expect(yield* lock.tryAcquire({ ...lease, owner: "b", host: "host-b" })).toBe(true)
        const row = Option.getOrThrow(yield* lock.read("report"))
        expect(row).toEqual({ name: "report", owner: "b", host: "host-b", acquiredAt: T0, expiresAt: T0 + MINUTE })
      }))

    it.effect("the owner acquiring again holds it and leaves the row unchanged", () =>
      Effect.gen(function*() {
        const lock = yield* freshLock()
        expect(yield* lock.tryAcquire({ name: "n", owner: "a", now: T0, expiresAt: T0 + MINUTE })).toBe(true)
        expect(yield* lock.tryAcquire({ name: "n", owner: "a", now: T0 + 5, expiresAt: T0 + 9 * MINUTE })).toBe(true)
        expect(Option.getOrThrow(yield* lock.read("n")).expiresAt).toBe(T0 + MINUTE)
      }))

    it.effect("an expired lease is taken over (strictly after expiry); the old owner can neither renew nor release it", () =>
      Effect.gen(function*() {
        const lock = yield* freshLock()
        const expiresAt = T0 + MINUTE
        expect(yield* lock.tryAcquire({ name: "n", owner: "old", host: "h1", now: T0, expiresAt })).toBe(true)
        // at the very millisecond of expiry it is still held
        expect(
          yield* lock.tryAcquire({ name: "n", owner: "new", host: "h2", now: expiresAt, expiresAt: expiresAt + MINUTE })
        )
          .toBe(false)
        expect(
          yield* lock.tryAcquire({
            name: "n",
            owner: "new",
            host: "h2",
            now: expiresAt + 1,
            expiresAt: expiresAt + MINUTE
          })
        )
          .toBe(true)
        expect(yield* lock.renew({ name: "n", owner: "old", expiresAt: expiresAt + 10 * MINUTE })).toBe(false)
        expect(yield* lock.release({ name: "n", owner: "old" })).toBe(false)
        expect(Option.getOrThrow(yield* lock.read("n"))).toEqual({
          name: "n",
          owner: "new",
          host: "h2",
          acquiredAt: expiresAt + 1,
          expiresAt: expiresAt + MINUTE
        })
      }))

    it.effect("renewal extends it, and epoch-ms values (1791039632175, above 2^32, up to 2^53-1) round-trip exactly", () =>
      Effect.gen(function*() {
        const lock = yield* freshLock()
        expect(yield* lock.tryAcquire({ name: "n", owner: "a", now: T0, expiresAt: T0 })).toBe(true)
        expect(Option.getOrThrow(yield* lock.read("n")).expiresAt).toBe(1791039632175)
        for (const at of [2 ** 32 + 7, 2 ** 40 + 123, Number.MAX_SAFE_INTEGER]) {
          expect(yield* lock.renew({ name: "n", owner: "a", expiresAt: at })).toBe(true)
          const row = Option.getOrThrow(yield* lock.read("n"))
          expect(row.expiresAt).toBe(at)
          expect(row.acquiredAt).toBe(T0)
        }
        // a renewed lease is not taken over before its new expiry
        expect(yield* lock.tryAcquire({ name: "n", owner: "b", now: T0 + 10 * MINUTE, ttlMs: MINUTE })).toBe(false)
      }))

    it.effect("times default to Effect's Clock", () =>
      Effect.gen(function*() {
        const lock = yield* freshLock()
        yield* TestClock.setTime(T0)
        expect(yield* lock.tryAcquire({ name: "n", owner: "a", ttlMs: MINUTE })).toBe(true)
        expect(Option.getOrThrow(yield* lock.read("n"))).toMatchObject({ acquiredAt: T0, expiresAt: T0 + MINUTE })
        yield* TestClock.adjust(MINUTE + 1)
        expect(yield* lock.tryAcquire({ name: "n", owner: "b", ttlMs: MINUTE })).toBe(true)
        expect(yield* lock.renew({ name: "n", owner: "b", ttlMs: 5 * MINUTE })).toBe(true)
        expect(Option.getOrThrow(yield* lock.read("n")).expiresAt).toBe(T0 + MINUTE + 1 + 5 * MINUTE)
      }))

    it.effect("release with expiredBefore removes only an expired lease", () =>
      Effect.gen(function*() {
        const lock = yield* freshLock()
        yield* lock.tryAcquire({ name: "n", owner: "a", now: T0, expiresAt: T0 + MINUTE })
        expect(yield* lock.release({ name: "n", owner: "a", expiredBefore: T0 + MINUTE })).toBe(false)
        expect(yield* lock.ownerOf("n")).toEqual(Option.some("a"))
        expect(yield* lock.release({ name: "n", owner: "a", expiredBefore: T0 + MINUTE + 1 })).toBe(true)
        expect(yield* lock.ownerOf("n")).toEqual(Option.none())
      }))

    it.effect("two lease tables are independent (the migration lock has its own table)", () =>
      Effect.gen(function*() {
        const jobs = yield* freshLock("joblocks")
        const migrations = yield* freshLock("migrationlocks")
        expect(jobs.table).not.toBe(migrations.table)
        expect(jobs.createTableSql).toContain(jobs.table)
        expect(migrations.createTableSql).toContain(migrations.table)
        expect(yield* jobs.tryAcquire({ name: "migrate", owner: "a", now: T0, ttlMs: MINUTE })).toBe(true)
        expect(yield* migrations.tryAcquire({ name: "migrate", owner: "b", now: T0, ttlMs: MINUTE })).toBe(true)
        expect(yield* jobs.ownerOf("migrate")).toEqual(Option.some("a"))
        expect(yield* migrations.ownerOf("migrate")).toEqual(Option.some("b"))
        expect((yield* migrations.list).map((r) => r.owner)).toEqual(["b"])
      }))

    it.effect("50 concurrent tryAcquire calls on one free name, on separate connections: exactly one wins", () =>
      Effect.gen(function*() {
        const db = yield* TestDatabase
        const table = db.table("race")
        yield* Effect.flatMap(db.leaseLock(table), (l) => l.ensureTable)
        const locks = yield* db.leaseLocksApart(table, 50)
        const results = yield* Effect.all(
          locks.map((lock, i) => lock.tryAcquire({ name: "hot", owner: `owner-${i}`, now: T0, ttlMs: MINUTE })),
          { concurrency: "unbounded" }
        )
        expect(results.filter(Boolean)).toHaveLength(1)
        const winner = results.indexOf(true)
        expect(yield* locks[0]!.ownerOf("hot")).toEqual(Option.some(`owner-${winner}`))
      }))

    it.effect("20 concurrent take-overs of one expired lease: exactly one winner, and read() shows it", () =>
      Effect.gen(function*() {
        const db = yield* TestDatabase
        const table = db.table("takeover")
        yield* Effect.flatMap(db.leaseLock(table), (l) => l.ensureTable)
        const locks = yield* db.leaseLocksApart(table, 20)
        expect(yield* locks[0]!.tryAcquire({ name: "hot", owner: "stale", now: T0, expiresAt: T0 + 1000 })).toBe(true)
        const later = T0 + 5000
        const results = yield* Effect.all(
          locks.map((lock, i) =>
            lock.tryAcquire({ name: "hot", owner: `thief-${i}`, host: `h${i}`, now: later, ttlMs: MINUTE })
          ),
          { concurrency: "unbounded" }
        )
        expect(results.filter(Boolean)).toHaveLength(1)
        const winner = results.indexOf(true)
        expect(Option.getOrThrow(yield* locks[1]!.read("hot"))).toEqual({
          name: "hot",
          owner: `thief-${winner}`,
          host: `h${winner}`,
          acquiredAt: later,
          expiresAt: later + MINUTE
        })
      }))

    it.effect("a tryAcquire that finds the lease held inside an open transaction leaves the transaction usable", () =>
      Effect.gen(function*() {
        const db = yield* TestDatabase
        const lock = yield* freshLock()
        yield* lock.tryAcquire({ name: "held", owner: "other", now: T0, ttlMs: MINUTE })
        const inside = yield* db.withTransaction(Effect.gen(function*() {
          const held = yield* lock.tryAcquire({ name: "held", owner: "me", now: T0, ttlMs: MINUTE })
          // the transaction can still write, and then commits
          const free = yield* lock.tryAcquire({ name: "free", owner: "me", now: T0, ttlMs: MINUTE })
          return { held, free }
        }))
        expect(inside).toEqual({ held: false, free: true })
        expect(yield* lock.ownerOf("free")).toEqual(Option.some("me"))
        expect(yield* lock.ownerOf("held")).toEqual(Option.some("other"))
      }))

    it.effect("a lease taken inside a transaction that rolls back is not kept", () =>
      Effect.gen(function*() {
        const db = yield* TestDatabase
        const lock = yield* freshLock()
        const result = yield* db.withTransaction(Effect.gen(function*() {
          expect(yield* lock.tryAcquire({ name: "n", owner: "me", now: T0, ttlMs: MINUTE })).toBe(true)
          return yield* Effect.fail("boom" as const)
        })).pipe(Effect.either)
        expect(result).toEqual(Either.left("boom"))
        expect(yield* lock.ownerOf("n")).toEqual(Option.none())
      }))

    it.effect("names, owners and hosts with quotes, ;, --, backslashes, unicode and exactly 100 characters round-trip verbatim", () =>
      Effect.gen(function*() {
        const lock = yield* freshLock()
        const names = [...ODD_STRINGS, "x".repeat(100), "é".repeat(100), "key:" + "ü".repeat(96)]
        for (const [i, name] of names.entries()) {
          const owner = (ODD_STRINGS[i % ODD_STRINGS.length]! + i).slice(0, 64)
          const host = ODD_STRINGS[(i + 1) % ODD_STRINGS.length]! + "ħ".repeat(200)
          expect(yield* lock.tryAcquire({ name, owner, host, now: T0, ttlMs: MINUTE })).toBe(true)
          expect(Option.getOrThrow(yield* lock.read(name))).toEqual({
            name,
            owner,
            host,
            acquiredAt: T0,
            expiresAt: T0 + MINUTE
          })
        }
        const listed = (yield* lock.list).map((r) => r.name)
        expect([...listed].sort()).toEqual([...names].sort())
        // names differing only by case or trailing characters are distinct leases
        expect(yield* lock.tryAcquire({ name: "Report", owner: "a", now: T0, ttlMs: MINUTE })).toBe(true)
        expect(yield* lock.tryAcquire({ name: "report", owner: "b", now: T0, ttlMs: MINUTE })).toBe(true)
      }))

    it.effect("a name over 100 characters, an owner over 64 or a NUL fails with a typed error and writes nothing", () =>
      Effect.gen(function*() {
        const lock = yield* freshLock()
        const tooLong = yield* Effect.flip(lock.tryAcquire({ name: "x".repeat(101), owner: "a", now: T0, ttlMs: 1 }))
        expect(tooLong._tag).toBe("LeaseInputError")
        expect(tooLong).toMatchObject({ field: "name" })
        const owner = yield* Effect.flip(lock.tryAcquire({ name: "n", owner: "o".repeat(65), now: T0, ttlMs: 1 }))
        expect(owner).toMatchObject({ _tag: "LeaseInputError", field: "owner" })
        const nul = yield* Effect.flip(lock.tryAcquire({ name: "a\u0000b", owner: "a", now: T0, ttlMs: 1 }))
        expect(nul).toMatchObject({ _tag: "LeaseInputError", field: "name" })
        // MySQL would compare `x` and `x ` as equal: a trailing space is refused everywhere
        expect(yield* Effect.flip(lock.tryAcquire({ name: "x ", owner: "a", now: T0, ttlMs: 1 }))).toMatchObject({
          field: "name"
        })
        expect(yield* Effect.flip(lock.release({ name: "x", owner: "a " }))).toMatchObject({ field: "owner" })
        const nan = yield* Effect.flip(lock.tryAcquire({ name: "n", owner: "a", now: T0, ttlMs: Number.NaN }))
        expect(nan).toMatchObject({ _tag: "LeaseInputError", field: "expiresAt" })
        expect(yield* lock.list).toEqual([])
      }))

    it.effect("ensureTable inside a transaction fails with the typed error carrying CREATE TABLE, and creates nothing", () =>
      Effect.gen(function*() {
        const db = yield* TestDatabase
        const lock = yield* db.leaseLock(db.table("intx"))
        const error = yield* Effect.flip(db.withTransaction(lock.ensureTable))
        expect(error._tag).toBe("LeaseTableInTransactionError")
        if (error._tag === "LeaseTableInTransactionError") {
          expect(error.table).toBe(lock.table)
          expect(error.createTable).toContain("CREATE TABLE")
          expect(error.message).toContain(lock.table)
        }
        expect(yield* lock.tableExists).toBe(false)
        yield* lock.ensureTable
        expect(yield* lock.tableExists).toBe(true)
        // and inside a transaction, an existing table is fine
        yield* db.withTransaction(lock.ensureTable)
      }))

    it.effect("a missing table makes tryAcquire fail with the database error, not return false", () =>
      Effect.gen(function*() {
        const db = yield* TestDatabase
        const lock = yield* db.leaseLock(db.table("missing"))
        const error = yield* Effect.flip(lock.tryAcquire({ name: "n", owner: "a", now: T0, ttlMs: MINUTE }))
        expect(error._tag).toBe("SqlError")
        expect(yield* lock.tableExists).toBe(false)
      }))
  })
