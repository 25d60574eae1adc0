/**
 * Bad-input catalogue, LeaseLock (issue 6, docs/behaviour.md §2): odd names, owners and hosts
 * round-trip through every operation; over-long or unstorable ones, and NaN, infinite,
 * fractional, huge or already-expired times, are refused with LeaseInputError and change
 * nothing. Each adapter has a LeaseLock of its own, so all of this runs on every adapter.
 */
import { expect } from "@effect/vitest"
import { Effect, Option, TestClock } from "effect"
import type { LeaseError, LeaseExpiry } from "../../../src/LeaseLock.ts"
import { TestDatabase } from "../../support/databases.ts"
import type { BadInputArea } from "./helpers.ts"
import { ODD, sized, T0, UNSTORABLE } from "./inputs.ts"

/** The LeaseLock area of the catalogue. */
export const leaseArea: BadInputArea = (it) => {
  it.effect("LeaseLock: odd names, owners and hosts round-trip through acquire, renew, read and release; over-long or unstorable ones are refused", () =>
    Effect.gen(function*() {
      const db = yield* TestDatabase
      const lock = yield* db.leaseLock(db.table("locks"))
      yield* lock.ensureTable
      const MINUTE = 60_000
      const accepted: ReadonlyArray<readonly [label: string, name: string, owner: string, host: string | null]> = [
        ...ODD.map(([label, v]) => [label, v, v, v] as const),
        ["longest name, owner and host", sized(100), sized(64, "o'\";é🚀\t"), sized(255, "h'\";é🚀\t")],
        ["multi-byte at the limits", "名".repeat(100), "ü".repeat(64), "ħ".repeat(255)],
        ["no host", "hostless", "o", null]
      ]
      for (const [label, name, owner, host] of accepted) {
        expect(yield* lock.tryAcquire({ name, owner, host, now: T0, ttlMs: MINUTE }), label).toBe(true)
        expect(yield* lock.read(name), label).toEqual(
          Option.some({ name, owner, host, acquiredAt: T0, expiresAt: T0 + MINUTE })
        )
        expect(yield* lock.ownerOf(name), label).toEqual(Option.some(owner))
        // an owner that differs only by normalisation or a trailing control character is someone else
        const others = [
          owner.length < 64 ? `${owner}\t` : `${owner.slice(0, 63)}\t`,
          owner.normalize("NFC"),
          owner.normalize("NFD")
        ]
        for (const other of others.filter((o) => o !== owner && o.length <= 64)) {
          expect(yield* lock.renew({ name, owner: other, expiresAt: T0 + 9 * MINUTE }), label).toBe(false)
          expect(yield* lock.release({ name, owner: other }), label).toBe(false)
        }
        expect(yield* lock.renew({ name, owner, expiresAt: T0 + 2 * MINUTE }), label).toBe(true)
        expect(Option.map(yield* lock.read(name), (r) => r.expiresAt), label).toEqual(Option.some(T0 + 2 * MINUTE))
      }
      expect((yield* lock.list).map((r) => r.name).sort()).toEqual(accepted.map(([, name]) => name).sort())
      for (const [label, name, owner] of accepted) {
        expect(yield* lock.release({ name, owner }), label).toBe(true)
        expect(yield* lock.read(name), label).toEqual(Option.none())
      }
      // refused: every operation, nothing written
      yield* lock.tryAcquire({ name: "kept", owner: "o", now: T0, ttlMs: MINUTE })
      const before = yield* lock.list
      const refused: ReadonlyArray<
        readonly [
          label: string,
          field: "name" | "owner" | "host",
          name: string,
          owner: string,
          host: string,
          reason: RegExp
        ]
      > = [
        ...[101, 255, 256, 10_000].map((n) =>
          [
            `a ${n}-character name`,
            "name",
            sized(n),
            "o",
            "h",
            new RegExp(`is ${n} characters; at most 100 fit`)
          ] as const
        ),
        ...[65, 100, 10_000].map((n) =>
          [
            `a ${n}-character owner`,
            "owner",
            "n",
            sized(n),
            "h",
            new RegExp(`is ${n} characters; at most 64 fit`)
          ] as const
        ),
        ...[256, 10_000].map((n) =>
          [
            `a ${n}-character host`,
            "host",
            "n",
            "o",
            sized(n),
            new RegExp(`is ${n} characters; at most 255 fit`)
          ] as const
        ),
        ["an empty name", "name", "", "o", "h", /is empty/],
        ["an empty owner", "owner", "n", "", "h", /is empty/],
        ...UNSTORABLE.flatMap(([label, v]) => [
          [`${label} in the name`, "name", v, "o", "h", /contains/] as const,
          [`${label} in the owner`, "owner", "n", v, "h", /contains/] as const,
          [`${label} in the host`, "host", "n", "o", v, /contains/] as const
        ])
      ]
      for (const [label, field, name, owner, host, reason] of refused) {
        const calls: ReadonlyArray<Effect.Effect<unknown, LeaseError>> = [
          lock.tryAcquire({ name, owner, host, now: T0, ttlMs: MINUTE }),
          ...(field === "host"
            ? []
            : [lock.renew({ name, owner, expiresAt: T0 + MINUTE }), lock.release({ name, owner })]),
          ...(field === "name" ? [lock.read(name), lock.ownerOf(name)] : [])
        ]
        for (const call of calls) {
          const error = yield* Effect.flip(call)
          expect(error, label).toMatchObject({ _tag: "LeaseInputError", field })
          if (error._tag === "LeaseInputError") expect(error.reason, label).toMatch(reason)
        }
      }
      expect(yield* lock.list).toEqual(before)
    }))

  it.effect("LeaseLock: NaN, infinite, fractional and huge expiresAt or ttlMs are refused with LeaseInputError and change nothing", () =>
    Effect.gen(function*() {
      const db = yield* TestDatabase
      const lock = yield* db.leaseLock(db.table("locks"))
      yield* lock.ensureTable
      const bad = [
        Number.NaN,
        Number.POSITIVE_INFINITY,
        Number.NEGATIVE_INFINITY,
        1.5,
        2 ** 53,
        2 ** 53 + 2,
        1e308,
        -1e308
      ]
      const expiries = [...bad.map((expiresAt) => ({ expiresAt })), ...bad.map((ttlMs) => ({ ttlMs }))]
      for (const expiry of expiries) {
        const error = yield* Effect.flip(lock.tryAcquire({ name: "n", owner: "a", now: T0, ...expiry }))
        expect(error, JSON.stringify(expiry)).toMatchObject({ _tag: "LeaseInputError", field: "expiresAt" })
      }
      expect(yield* lock.list).toEqual([])
      expect(yield* lock.tryAcquire({ name: "n", owner: "a", host: "h", now: T0, ttlMs: 0 })).toBe(true)
      const held = { name: "n", owner: "a", host: "h", acquiredAt: T0, expiresAt: T0 }
      expect(yield* lock.read("n")).toEqual(Option.some(held))
      for (const expiry of expiries) {
        const error = yield* Effect.flip(lock.renew({ name: "n", owner: "a", now: T0, ...expiry }))
        expect(error, JSON.stringify(expiry)).toMatchObject({ _tag: "LeaseInputError", field: "expiresAt" })
      }
      expect(yield* lock.list).toEqual([held])
      // the largest exact value is stored exactly
      expect(yield* lock.renew({ name: "n", owner: "a", expiresAt: Number.MAX_SAFE_INTEGER })).toBe(true)
      expect(Option.map(yield* lock.read("n"), (r) => r.expiresAt)).toEqual(Option.some(Number.MAX_SAFE_INTEGER))
    }))

  it.effect("LeaseLock: a NaN, infinite, fractional or huge now is refused with LeaseInputError (field now) and changes nothing", () =>
    Effect.gen(function*() {
      const db = yield* TestDatabase
      const lock = yield* db.leaseLock(db.table("locks"))
      yield* lock.ensureTable
      const MINUTE = 60_000
      expect(yield* lock.tryAcquire({ name: "held", owner: "a", host: "h", now: T0, ttlMs: MINUTE })).toBe(true)
      expect(yield* lock.tryAcquire({ name: "stale", owner: "a", host: "h", now: T0 - 2 * MINUTE, ttlMs: MINUTE }))
        .toBe(true)
      const before = yield* lock.list
      // before: each database did something different (NaN rows, SqlErrors, take-overs)
      for (
        const now of [
          Number.NaN,
          Number.POSITIVE_INFINITY,
          Number.NEGATIVE_INFINITY,
          1.5,
          T0 + 0.5,
          2 ** 53,
          1e308,
          -1e308
        ]
      ) {
        const calls: ReadonlyArray<Effect.Effect<unknown, LeaseError>> = [
          lock.tryAcquire({ name: "free", owner: "b", now, ttlMs: MINUTE }),
          lock.tryAcquire({ name: "free", owner: "b", now, expiresAt: T0 + MINUTE }),
          lock.tryAcquire({ name: "held", owner: "a", now, ttlMs: MINUTE }),
          lock.tryAcquire({ name: "stale", owner: "b", now, expiresAt: T0 + MINUTE }),
          lock.renew({ name: "held", owner: "a", now, ttlMs: MINUTE }),
          lock.renew({ name: "held", owner: "a", now, expiresAt: T0 + 2 * MINUTE })
        ]
        for (const call of calls) {
          expect(yield* Effect.flip(call), String(now)).toMatchObject({ _tag: "LeaseInputError", field: "now" })
        }
      }
      expect(yield* lock.list).toEqual(before)
      // whole values, including 0, are times like any other
      expect(yield* lock.tryAcquire({ name: "stale", owner: "b", host: "h", now: T0, ttlMs: MINUTE })).toBe(true)
      expect(yield* lock.tryAcquire({ name: "zero", owner: "z", host: null, now: 0, ttlMs: 0 })).toBe(true)
      expect(yield* lock.read("zero")).toEqual(
        Option.some({ name: "zero", owner: "z", host: null, acquiredAt: 0, expiresAt: 0 })
      )
    }))

  it.effect("LeaseLock: release with a NaN, infinite, fractional or huge expiredBefore is refused with LeaseInputError and changes nothing", () =>
    Effect.gen(function*() {
      const db = yield* TestDatabase
      const lock = yield* db.leaseLock(db.table("locks"))
      yield* lock.ensureTable
      const MINUTE = 60_000
      expect(yield* lock.tryAcquire({ name: "n", owner: "a", host: "h", now: T0, ttlMs: MINUTE })).toBe(true)
      const before = yield* lock.list
      // before: Infinity removed a live lease on some stores, NaN failed with an SqlError on others
      for (
        const expiredBefore of [
          Number.NaN,
          Number.POSITIVE_INFINITY,
          Number.NEGATIVE_INFINITY,
          1.5,
          T0 + MINUTE + 0.5,
          2 ** 53,
          1e308,
          -1e308
        ]
      ) {
        const error = yield* Effect.flip(lock.release({ name: "n", owner: "a", expiredBefore }))
        expect(error, String(expiredBefore)).toMatchObject({ _tag: "LeaseInputError", field: "expiredBefore" })
      }
      expect(yield* lock.list).toEqual(before)
      expect(yield* lock.release({ name: "n", owner: "a", expiredBefore: T0 + MINUTE })).toBe(false)
      expect(yield* lock.release({ name: "n", owner: "a", expiredBefore: T0 + MINUTE + 1 })).toBe(true)
      expect(yield* lock.list).toEqual([])
    }))

  it.effect("LeaseLock: a negative ttlMs or an expiresAt before now (an already expired lease) is refused with LeaseInputError and changes nothing; ttlMs 0 is allowed", () =>
    Effect.gen(function*() {
      const db = yield* TestDatabase
      const lock = yield* db.leaseLock(db.table("locks"))
      yield* lock.ensureTable
      yield* TestClock.setTime(T0)
      const MINUTE = 60_000
      expect(yield* lock.tryAcquire({ name: "held", owner: "a", host: "h", now: T0, ttlMs: MINUTE })).toBe(true)
      expect(yield* lock.tryAcquire({ name: "stale", owner: "a", host: "h", now: T0 - 2 * MINUTE, ttlMs: MINUTE }))
        .toBe(true)
      const before = yield* lock.list
      const expired: ReadonlyArray<LeaseExpiry> = [
        { ttlMs: -1 },
        { ttlMs: -MINUTE },
        { ttlMs: -0.5 },
        { ttlMs: -T0 },
        { expiresAt: T0 - 1 },
        { expiresAt: T0 - MINUTE },
        { expiresAt: 0 },
        { expiresAt: -1 }
      ]
      for (const expiry of expired) {
        const label = JSON.stringify(expiry)
        const calls: ReadonlyArray<Effect.Effect<unknown, LeaseError>> = [
          lock.tryAcquire({ name: "free", owner: "b", now: T0, ...expiry }),
          lock.tryAcquire({ name: "held", owner: "a", now: T0, ...expiry }),
          lock.tryAcquire({ name: "stale", owner: "b", now: T0, ...expiry }),
          lock.renew({ name: "held", owner: "a", now: T0, ...expiry }),
          // now from the Clock
          lock.tryAcquire({ name: "free", owner: "b", ...expiry }),
          lock.renew({ name: "held", owner: "a", ...expiry })
        ]
        for (const call of calls) {
          const error = yield* Effect.flip(call)
          expect(error, label).toMatchObject({ _tag: "LeaseInputError", field: "expiresAt" })
          if (error._tag === "LeaseInputError") expect(error.reason, label).toMatch(/expired already/)
        }
      }
      expect(yield* lock.list).toEqual(before)
      // a lease that expires exactly now is allowed: it is live until now has passed
      expect(yield* lock.tryAcquire({ name: "free", owner: "b", host: "h", now: T0, ttlMs: 0 })).toBe(true)
      expect(yield* lock.renew({ name: "held", owner: "a", now: T0 + 5, expiresAt: T0 + 5 })).toBe(true)
      expect(yield* lock.renew({ name: "held", owner: "a", ttlMs: 0 })).toBe(true)
      expect(yield* lock.list).toEqual([
        { name: "free", owner: "b", host: "h", acquiredAt: T0, expiresAt: T0 },
        { name: "held", owner: "a", host: "h", acquiredAt: T0, expiresAt: T0 },
        before[1]
      ])
    }))
}
