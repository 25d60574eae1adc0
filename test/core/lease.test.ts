/** Property tests of the pure lease rules (docs/behaviour.md §3). */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import {
  busyDelaySeconds,
  decodeEpochMs,
  fitLeaseName,
  giveBackAttempt,
  isExpired,
  leaseExpiresAt,
  leaseNameFor,
  leaseWindowSeconds,
  mayAcquire
} from "../../src/core/lease.ts"

const prefixes = fc.constantFrom("key:", "job:")

describe("lease name", () => {
  it("a fitted name is never over 100 characters, keeps its prefix and is deterministic", () =>
    fc.assert(fc.property(prefixes, fc.string({ maxLength: 400 }), (prefix, key) => {
      const name = fitLeaseName(prefix, key)
      expect(name.length).toBeLessThanOrEqual(100)
      expect(name.startsWith(prefix)).toBe(true)
      expect(fitLeaseName(prefix, key)).toBe(name)
    })))

  it("is unchanged when it already fits, and hashed to prefix + 64 lowercase hex otherwise", () =>
    fc.assert(fc.property(prefixes, fc.string({ maxLength: 300 }), (prefix, key) => {
      const name = fitLeaseName(prefix, key)
      if (prefix.length + key.length <= 100) expect(name).toBe(prefix + key)
      else expect(name).toMatch(new RegExp(`^${prefix}[0-9a-f]{64}$`))
    })))

  it("different long keys get different names", () =>
    fc.assert(fc.property(fc.string({ minLength: 97, maxLength: 200 }), fc.string({ minLength: 97, maxLength: 200 }), (a, b) => {
      fc.pre(a !== b)
      expect(fitLeaseName("key:", a)).not.toBe(fitLeaseName("key:", b))
    })))

  it("follows the order concurrencyKeyFor → concurrencyKey → exclusive → none", () => {
    const payload = { accountId: "a1" }
    const keyFor = (p: typeof payload) => `acct-${p.accountId}`
    expect(leaseNameFor("Sync", { concurrencyKeyFor: keyFor }, payload)).toBe("key:acct-a1")
    expect(leaseNameFor("Nightly", { concurrencyKey: "nightly-report" }, payload)).toBe("key:nightly-report")
    expect(leaseNameFor("ReportJob", { exclusive: true }, payload)).toBe("job:ReportJob")
    expect(leaseNameFor("Plain", {}, payload)).toBeUndefined()
    expect(leaseNameFor("Both", { concurrencyKey: "static", concurrencyKeyFor: keyFor, exclusive: true }, payload))
      .toBe("key:acct-a1")
    // blank keys fall through
    expect(leaseNameFor("Blank", { concurrencyKeyFor: () => "  ", concurrencyKey: "static" }, payload)).toBe("key:static")
    expect(leaseNameFor("Blank", { concurrencyKeyFor: () => null, concurrencyKey: "", exclusive: true }, payload))
      .toBe("job:Blank")
    expect(leaseNameFor("Blank", { concurrencyKey: " " }, payload)).toBeUndefined()
    // surrounding spaces never make a different lease
    expect(leaseNameFor("Pad", { concurrencyKey: " acct-1  " }, payload)).toBe("key:acct-1")
    const long = leaseNameFor("Long", { concurrencyKey: "k".repeat(120) }, payload)!
    expect(long).toHaveLength(68)
    expect(long.startsWith("key:")).toBe(true)
  })
})

describe("lease window and busy delay", () => {
  it("the window is at least claim + 60 and at least 2 × claim", () =>
    fc.assert(fc.property(fc.integer({ min: 1, max: 10_000_000 }), (claim) => {
      const w = leaseWindowSeconds(claim)
      expect(w).toBeGreaterThanOrEqual(claim + 60)
      expect(w).toBeGreaterThanOrEqual(2 * claim)
      expect(w).toBe(claim + Math.max(60, claim))
    })))

  it("a missing, zero, negative or NaN claim timeout means 300 s", () => {
    for (const claim of [undefined, null, 0, -5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(leaseWindowSeconds(claim)).toBe(600)
    }
    expect(leaseWindowSeconds(30)).toBe(90)
    expect(leaseExpiresAt(1000, 30)).toBe(91_000)
  })

  it("the busy delay is always within [1, 30] seconds", () =>
    fc.assert(fc.property(
      fc.option(fc.integer({ min: -1e12, max: 1e13 }), { nil: undefined }),
      fc.integer({ min: 0, max: 1e12 }),
      (expiresAt, now) => {
        const d = busyDelaySeconds(expiresAt, now)
        expect(Number.isInteger(d)).toBe(true)
        expect(d).toBeGreaterThanOrEqual(1)
        expect(d).toBeLessThanOrEqual(30)
      }
    )))

  it("the busy delay is the holder's remaining time rounded up, or 1 when it turned free", () => {
    expect(busyDelaySeconds(10_500, 0)).toBe(11)
    expect(busyDelaySeconds(10_000, 0)).toBe(10)
    expect(busyDelaySeconds(600_000, 0)).toBe(30)
    expect(busyDelaySeconds(undefined, 0)).toBe(1)
    expect(busyDelaySeconds(5, 10)).toBe(1)
  })
})

describe("give-back, expiry and take-over decisions", () => {
  it("give-back never goes below 0 and takes back exactly one attempt", () =>
    fc.assert(fc.property(fc.integer({ min: -5, max: 1000 }), (attempts) => {
      const back = giveBackAttempt(attempts)
      expect(back).toBeGreaterThanOrEqual(0)
      if (attempts >= 1) expect(back).toBe(attempts - 1)
    })))

  it("a lease is expired strictly after its expiry", () =>
    fc.assert(fc.property(fc.integer(), fc.integer(), (expiresAt, now) => {
      expect(isExpired(expiresAt, now)).toBe(expiresAt < now)
    })))

  it("mayAcquire: free, expired or ours", () => {
    const row = { name: "n", owner: "a", host: null, acquiredAt: 0, expiresAt: 100 }
    expect(mayAcquire(undefined, "b", 50)).toBe(true)
    expect(mayAcquire(row, "b", 100)).toBe(false)
    expect(mayAcquire(row, "b", 101)).toBe(true)
    expect(mayAcquire(row, "a", 50)).toBe(true)
  })

  it("decodes epoch ms from string, number and bigint, and refuses anything else", () =>
    fc.assert(fc.property(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), (n) => {
      expect(decodeEpochMs(n)).toBe(n)
      expect(decodeEpochMs(String(n))).toBe(n)
      expect(decodeEpochMs(BigInt(n))).toBe(n)
      expect(() => decodeEpochMs("12x")).toThrow(RangeError)
      expect(() => decodeEpochMs(null)).toThrow(RangeError)
      expect(() => decodeEpochMs(2 ** 60)).toThrow(RangeError)
    })))
})
