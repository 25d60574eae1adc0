/**
 * Property tests of the pure lease rules, derived from the statements of docs/behaviour.md §3
 * (and the examples of §11), not from the code: each rule is checked through what it promises —
 * its cases, bounds, orderings and invariances, and how it fits the neighbouring rules (the
 * reaper's grace of §7, the busy polls of §8) — rather than by computing the same formula again.
 */
import fc from "fast-check"
import { createHash } from "node:crypto"
import { describe, expect, it } from "vitest"
import { isStale } from "../../src/core/jobs.ts"
import {
  busyDelaySeconds,
  CLAIM_LEASE_FRESH_MS,
  isClaimLeaseFresh,
  decodeEpochMs,
  fitLeaseName,
  giveBackAttempt,
  isExpired,
  leaseExpiresAt,
  leaseNameFor,
  type LeaseOptions,
  leaseWindowMs,
  leaseWindowSeconds,
  mayAcquire,
  mayTakeLease
} from "../../src/core/lease.ts"
import { applyClaim, applyHeartbeat, applyOutcome, newJobRow } from "../../src/core/transitions.ts"

const SECOND = 1000
/** The widest a lease name may be (§1: lockname VARCHAR(100)). */
const NAME_WIDTH = 100

const prefixes = fc.constantFrom("key:", "job:")
/** Keys as an app might write them: any text, unicode included. */
const keys = fc.string({ unit: "grapheme", maxLength: 300 })
/** Text that is blank: empty or only whitespace (§3: a blank key counts as no key). */
const blanks = fc.constantFrom("", " ", "  ", "\t", " \t\r\n ")
/** A key that is not blank, without surrounding whitespace. */
const solidKeys = fc.string({ unit: "grapheme", minLength: 1, maxLength: 200 }).map((s) => s.trim()).filter((s) =>
  s !== ""
)
/** Whole claim timeouts in seconds, from 1 s to far beyond any real job. */
const claims = fc.integer({ min: 1, max: 10_000_000 })
/** Epoch-ms instants, around today and far from it. */
const instants = fc.integer({ min: 0, max: 4_000_000_000_000 })

/** §3 Fit, read from the doc: SHA-256 of the key, in lowercase hex (node's own hash as the oracle). */
const sha256Hex = (key: string) => createHash("sha256").update(key, "utf8").digest("hex")

describe("§3 Fit: prefix + key when it fits in 100 characters, else prefix + SHA-256 hex of the key", () => {
  it("a name that fits is the prefix and the key, unchanged", () =>
    fc.assert(fc.property(prefixes, keys, (prefix, key) => {
      fc.pre(prefix.length + key.length <= NAME_WIDTH)
      expect(fitLeaseName(prefix, key)).toBe(prefix + key)
    })))

  it("a name that does not fit is the prefix and the key's lowercase SHA-256 hex: 68 characters", () =>
    fc.assert(fc.property(prefixes, fc.string({ minLength: NAME_WIDTH - 3, maxLength: 400 }), (prefix, key) => {
      const name = fitLeaseName(prefix, key)
      expect(name).toBe(prefix + sha256Hex(key))
      expect(name).toHaveLength(68)
      expect(name).toMatch(/^(key|job):[0-9a-f]{64}$/)
    })))

  it("every name fits the lock table, keeps its prefix and is the same each time", () =>
    fc.assert(fc.property(prefixes, fc.string({ maxLength: 400 }), (prefix, key) => {
      const name = fitLeaseName(prefix, key)
      expect(name.length).toBeLessThanOrEqual(NAME_WIDTH)
      expect(name.startsWith(prefix)).toBe(true)
      expect(fitLeaseName(prefix, key)).toBe(name)
    })))

  it("different keys get different names, however long", () =>
    fc.assert(fc.property(prefixes, fc.string({ maxLength: 300 }), fc.string({ maxLength: 300 }), (prefix, a, b) => {
      fc.pre(a !== b)
      expect(fitLeaseName(prefix, a)).not.toBe(fitLeaseName(prefix, b))
    })))

  it("the boundary: 96 key characters fit behind a 4-character prefix, 97 do not", () => {
    expect(fitLeaseName("key:", "k".repeat(96))).toBe("key:" + "k".repeat(96))
    expect(fitLeaseName("key:", "k".repeat(97))).toBe("key:" + sha256Hex("k".repeat(97)))
  })
})

/** The lease options of a job type, as §3 lists them, with a function that returns `fromFunction`. */
const optionsOf = (o: {
  readonly fromFunction?: string | null | undefined
  readonly hasFunction: boolean
  readonly staticKey?: string | undefined
  readonly exclusive?: boolean | undefined
}): LeaseOptions<unknown> => ({
  concurrencyKeyFor: o.hasFunction ? () => o.fromFunction : undefined,
  concurrencyKey: o.staticKey,
  exclusive: o.exclusive
})

const anyFunctionResult = fc.oneof(fc.constant(null), fc.constant(undefined), blanks, solidKeys)
const anyStaticKey = fc.oneof(fc.constant(undefined), blanks, solidKeys)
const anyExclusive = fc.constantFrom(undefined, false, true)
const isSolid = (s: string | null | undefined): s is string => typeof s === "string" && s.trim() !== ""

describe("§3 Name: the function's key, else the static key (key:<key>); else exclusive (job:<name>); else none", () => {
  it("a non-blank key from the function wins over the static key and the exclusive flag", () =>
    fc.assert(
      fc.property(
        solidKeys,
        anyStaticKey,
        anyExclusive,
        fc.string({ minLength: 1, maxLength: 50 }),
        (key, staticKey, exclusive, job) => {
          const name = leaseNameFor(job, optionsOf({ hasFunction: true, fromFunction: key, staticKey, exclusive }), {})
          expect(name).toBe(fitLeaseName("key:", key))
        }
      )
    ))

  it("without one, a non-blank static key names the lease", () =>
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.oneof(fc.constant(null), fc.constant(undefined), blanks),
        solidKeys,
        anyExclusive,
        (hasFunction, fromFunction, key, exclusive) => {
          const name = leaseNameFor("Job", optionsOf({ hasFunction, fromFunction, staticKey: key, exclusive }), {})
          expect(name).toBe(fitLeaseName("key:", key))
        }
      )
    ))

  it("with no non-blank key, an exclusive type takes job:<name> and any other type no lease", () =>
    fc.assert(fc.property(
      fc.boolean(),
      fc.oneof(fc.constant(null), fc.constant(undefined), blanks),
      fc.oneof(fc.constant(undefined), blanks),
      anyExclusive,
      fc.string({ minLength: 1, maxLength: 300 }),
      (hasFunction, fromFunction, staticKey, exclusive, job) => {
        const name = leaseNameFor(job, optionsOf({ hasFunction, fromFunction, staticKey, exclusive }), {})
        expect(name).toBe(exclusive === true ? fitLeaseName("job:", job) : undefined)
      }
    )))

  it("a key implies exclusive: with a non-blank key the exclusive flag changes nothing", () =>
    fc.assert(fc.property(fc.boolean(), anyFunctionResult, anyStaticKey, (hasFunction, fromFunction, staticKey) => {
      fc.pre((hasFunction && isSolid(fromFunction)) || isSolid(staticKey))
      const named = (exclusive: boolean | undefined) =>
        leaseNameFor("Job", optionsOf({ hasFunction, fromFunction, staticKey, exclusive }), {})
      expect(named(true)).toBeDefined()
      expect(named(false)).toBe(named(true))
      expect(named(undefined)).toBe(named(true))
    })))

  it("a blank key counts as no key, and surrounding whitespace never makes a different lease", () =>
    fc.assert(
      fc.property(
        blanks,
        anyStaticKey,
        solidKeys,
        blanks,
        blanks,
        anyExclusive,
        (blank, staticKey, key, before, after, exclusive) => {
          const padded = `${before}${key}${after}`
          expect(leaseNameFor("Job", optionsOf({ hasFunction: true, fromFunction: blank, staticKey, exclusive }), {}))
            .toBe(leaseNameFor("Job", optionsOf({ hasFunction: false, staticKey, exclusive }), {}))
          expect(leaseNameFor("Job", optionsOf({ hasFunction: false, staticKey: blank, exclusive }), {}))
            .toBe(leaseNameFor("Job", optionsOf({ hasFunction: false, exclusive }), {}))
          expect(leaseNameFor("Job", optionsOf({ hasFunction: true, fromFunction: padded, exclusive }), {}))
            .toBe(leaseNameFor("Job", optionsOf({ hasFunction: true, fromFunction: key, exclusive }), {}))
          expect(leaseNameFor("Job", optionsOf({ hasFunction: false, staticKey: padded, exclusive }), {}))
            .toBe(leaseNameFor("Job", optionsOf({ hasFunction: false, staticKey: key, exclusive }), {}))
        }
      )
    ))

  it("a type whose jobs may take a lease is one that names one for some payload (mayTakeLease)", () =>
    fc.assert(fc.property(
      fc.boolean(),
      fc.oneof(fc.constant(undefined), blanks, solidKeys),
      fc.oneof(fc.constant(undefined), blanks, solidKeys),
      fc.option(fc.boolean(), { nil: undefined }),
      (hasFunction, fromFunction, staticKey, exclusive) => {
        const options = optionsOf({ hasFunction, fromFunction, staticKey, exclusive })
        const names = leaseNameFor("t", options, {}) !== undefined
        // A key function may name a lease for another payload even when it gives none for this one.
        expect(mayTakeLease(options)).toBe(names || hasFunction)
      }
    )))

  it("the function is asked with the job's own payload", () =>
    fc.assert(fc.property(fc.record({ accountId: solidKeys }), (payload) => {
      const options: LeaseOptions<{ readonly accountId: string }> = { concurrencyKeyFor: (p) => `acct-${p.accountId}` }
      expect(leaseNameFor("Sync", options, payload)).toBe(fitLeaseName("key:", `acct-${payload.accountId}`))
    })))

  it("the examples of §11", () => {
    const payload = { accountId: "a1" }
    const keyFor = (p: typeof payload) => `acct-${p.accountId}`
    expect(leaseNameFor("Sync", { concurrencyKeyFor: keyFor }, payload)).toBe("key:acct-a1")
    expect(leaseNameFor("Nightly", { concurrencyKey: "nightly-report" }, payload)).toBe("key:nightly-report")
    expect(leaseNameFor("ReportJob", { exclusive: true }, payload)).toBe("job:ReportJob")
    expect(leaseNameFor("Plain", {}, payload)).toBeUndefined()
    expect(leaseNameFor("Both", { concurrencyKey: "static", concurrencyKeyFor: keyFor, exclusive: true }, payload))
      .toBe("key:acct-a1")
    // blank keys fall through
    expect(leaseNameFor("Blank", { concurrencyKeyFor: () => "  ", concurrencyKey: "static" }, payload)).toBe(
      "key:static"
    )
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

describe("§3 Window: claim t (≤ 0 means 300), window = t + max(60, t), the lease expires at now + window", () => {
  it("up to a minute's claim, the window is the claim plus one minute", () =>
    fc.assert(fc.property(fc.integer({ min: 1, max: 60 }), (t) => {
      expect(leaseWindowSeconds(t) - t).toBe(60)
    })))

  it("from a minute's claim on, the window is twice the claim", () =>
    fc.assert(fc.property(fc.integer({ min: 60, max: 10_000_000 }), (t) => {
      expect(leaseWindowSeconds(t)).toBe(2 * t)
    })))

  it("the window always outlasts the claim by at least a minute and grows with it", () =>
    fc.assert(fc.property(claims, claims, (a, b) => {
      expect(leaseWindowSeconds(a)).toBeGreaterThanOrEqual(a + 60)
      expect(leaseWindowSeconds(a)).toBeGreaterThanOrEqual(2 * a)
      if (a <= b) expect(leaseWindowSeconds(a)).toBeLessThanOrEqual(leaseWindowSeconds(b))
    })))

  it("a missing, zero, negative or non-finite claim is taken as 300 s: a window of 600 s", () => {
    fc.assert(fc.property(fc.oneof(fc.integer({ max: 0 }), fc.double({ max: 0, noNaN: true })), (t) => {
      expect(leaseWindowSeconds(t)).toBe(leaseWindowSeconds(300))
    }))
    for (const t of [undefined, null, 0, -5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(leaseWindowSeconds(t)).toBe(600)
    }
    expect(leaseWindowSeconds(30)).toBe(90)
    expect(leaseExpiresAt(1000, 30)).toBe(91_000)
  })

  it("a lease taken at any instant expires exactly one window later", () =>
    fc.assert(fc.property(instants, claims, fc.integer({ min: 0, max: 1_000_000 }), (now, t, later) => {
      expect(leaseExpiresAt(now, t) - now).toBe(leaseWindowSeconds(t) * SECOND)
      // the same claim taken later expires that much later
      expect(leaseExpiresAt(now + later, t) - leaseExpiresAt(now, t)).toBe(later)
    })))

  it("a lease a claim took is used as is only by an attempt starting within a second of the claim (§8)", () =>
    fc.assert(fc.property(instants, claims, fc.integer({ min: 0, max: 10_000_000 }), (claimedAt, t, waited) => {
      const expiresAt = leaseExpiresAt(claimedAt, t)
      expect(isClaimLeaseFresh(expiresAt, claimedAt + waited, t)).toBe(waited <= CLAIM_LEASE_FRESH_MS)
      // never one that has run out, whatever the timeout
      if (isExpired(expiresAt, claimedAt + waited)) {
        expect(isClaimLeaseFresh(expiresAt, claimedAt + waited, t)).toBe(false)
      }
    })))

  /** What a worker's claim at `now` asks for, under `cap` (none when undefined). */
  const claimAt = (now: number, cap: number | undefined, claimToken = "tok") => ({
    queues: undefined,
    host: "h",
    now,
    claimToken,
    timeoutCap: cap,
    hostCap: undefined
  })

  // A row as a claim at `claimedAt` leaves it: its own grace (from its timeout, if any) capped
  // by the worker's cap (src/core/transitions.ts applyClaim).
  const claimedRow = (claimedAt: number, t: number | null, cap: number | undefined) =>
    applyClaim(
      {
        ...newJobRow({
          id: "j",
          name: "n",
          queue: "q",
          payload: "{}",
          priority: 0,
          maxRetries: 0,
          claimTimeout: t ?? 300,
          uniqueKey: "j",
          runAt: 0,
          now: 0
        }),
        claimTimeout: t,
        graceMs: t === null ? null : leaseWindowMs(t)
      },
      claimAt(claimedAt, cap)
    )

  it("it equals the reaper's grace (§7): a lease taken at the claim is free exactly when the silent row turns stale", () =>
    fc.assert(
      fc.property(
        instants,
        fc.option(claims, { nil: null }),
        fc.option(claims, { nil: undefined }),
        fc.integer({ min: -2_000_000_000, max: 2_000_000_000 }),
        (claimedAt, t, cap, offset) => {
          const now = claimedAt + offset
          const row = claimedRow(claimedAt, t, cap)
          expect(isExpired(leaseExpiresAt(claimedAt, row.claimTimeout), now)).toBe(isStale(row, now))
        }
      )
    ))

  it("so a lease taken at or after the claim is never free while the row is not stale", () =>
    fc.assert(
      fc.property(
        instants,
        claims,
        fc.integer({ min: 0, max: 10_000 }),
        fc.integer({ min: 0, max: 2_000_000_000 }),
        (claimedAt, t, takenAfter, offset) => {
          const now = claimedAt + offset
          const row = claimedRow(claimedAt, t, undefined)
          if (!isStale(row, now)) expect(isExpired(leaseExpiresAt(claimedAt + takenAfter, t), now)).toBe(false)
        }
      )
    ))

  it("a claim under a cap lowers the grace with the timeout: a later uncapped claim's row turns stale exactly when its lease is free", () =>
    fc.assert(
      fc.property(
        instants,
        claims,
        claims,
        fc.integer({ min: 1, max: 10_000_000 }),
        fc.integer({ min: -2_000_000_000, max: 2_000_000_000 }),
        (claimedAt, t, cap, later, offset) => {
          const capped = claimedRow(claimedAt, t, cap)
          const retried = applyOutcome(capped, { _tag: "Retry", runAt: claimedAt, error: "e" }, claimedAt)
          const again = applyClaim(retried, claimAt(claimedAt + later, undefined, "tok-2"))
          const now = claimedAt + later + offset
          expect(isStale(again, now)).toBe(isExpired(leaseExpiresAt(claimedAt + later, again.claimTimeout), now))
        }
      )
    ))

  it("a row without a grace (written by an older version) turns stale exactly when a lease taken at its claim is free", () =>
    fc.assert(
      fc.property(
        instants,
        fc.option(claims, { nil: null }),
        fc.option(claims, { nil: undefined }),
        fc.integer({ min: -2_000_000_000, max: 2_000_000_000 }),
        (claimedAt, t, cap, offset) => {
          const row = applyClaim(
            { ...claimedRow(0, t, undefined), status: "pending", graceMs: null, staleAt: null },
            claimAt(claimedAt, cap)
          )
          expect(row.staleAt).toBe(null)
          const now = claimedAt + offset
          expect(isStale(row, now)).toBe(isExpired(leaseExpiresAt(claimedAt, row.claimTimeout), now))
        }
      )
    ))

  it("a heartbeat moves the deadline with the lease: the row turns stale exactly when the renewed lease is free", () =>
    fc.assert(
      fc.property(
        instants,
        claims,
        fc.integer({ min: 0, max: 10_000_000 }),
        fc.integer({ min: -2_000_000_000, max: 2_000_000_000 }),
        (claimedAt, t, beatAfter, offset) => {
          const beat = claimedAt + beatAfter
          const row = applyHeartbeat(claimedRow(claimedAt, t, undefined), beat, leaseExpiresAt(beat, t))
          const now = beat + offset
          expect(isStale(row, now)).toBe(isExpired(leaseExpiresAt(beat, t), now))
        }
      )
    ))
})

describe("§3 Busy: wait the holder's remaining time in whole seconds (1 if it turned free), at most 30 s", () => {
  it("the delay is a whole number of seconds from 1 to 30", () =>
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

  it("within 30 s of its expiry, the retry comes when the holder's lease has run out, and less than a second later", () =>
    fc.assert(fc.property(instants, fc.integer({ min: 1, max: 30 * SECOND }), (now, remaining) => {
      const d = busyDelaySeconds(now + remaining, now)
      expect(d * SECOND).toBeGreaterThanOrEqual(remaining)
      expect((d - 1) * SECOND).toBeLessThan(remaining)
    })))

  it("a lease held for longer than 30 s more is looked at again after 30 s", () =>
    fc.assert(fc.property(instants, fc.integer({ min: 30 * SECOND + 1, max: 1e12 }), (now, remaining) => {
      expect(busyDelaySeconds(now + remaining, now)).toBe(30)
    })))

  it("a lease that turned free meanwhile (gone, or expired by now) is looked at again after 1 s", () =>
    fc.assert(fc.property(instants, fc.integer({ min: 0, max: 1e12 }), (now, ago) => {
      expect(busyDelaySeconds(undefined, now)).toBe(1)
      expect(busyDelaySeconds(now - ago, now)).toBe(1)
    })))

  it("a later expiry never means a shorter wait, and only the time remaining matters", () =>
    fc.assert(
      fc.property(
        instants,
        fc.integer({ min: -1e9, max: 1e9 }),
        fc.integer({ min: 0, max: 1e9 }),
        fc.integer({ min: 0, max: 1e12 }),
        (now, remaining, more, shift) => {
          expect(busyDelaySeconds(now + remaining + more, now)).toBeGreaterThanOrEqual(
            busyDelaySeconds(now + remaining, now)
          )
          expect(busyDelaySeconds(now + shift + remaining, now + shift)).toBe(busyDelaySeconds(now + remaining, now))
        }
      )
    ))

  it("the examples: 10.5 s left → 11 s, 10 s → 10 s, 10 min → 30 s, gone → 1 s, past → 1 s", () => {
    expect(busyDelaySeconds(10_500, 0)).toBe(11)
    expect(busyDelaySeconds(10_000, 0)).toBe(10)
    expect(busyDelaySeconds(600_000, 0)).toBe(30)
    expect(busyDelaySeconds(undefined, 0)).toBe(1)
    expect(busyDelaySeconds(5, 10)).toBe(1)
  })
})

describe("§3 Give-back: a deferral returns the attempt its claim counted, never below 0", () => {
  it("it takes back exactly one attempt, and from none it stays at none", () =>
    fc.assert(fc.property(fc.integer({ min: -5, max: 1000 }), (attempts) => {
      const back = giveBackAttempt(attempts)
      expect(back).toBeGreaterThanOrEqual(0)
      if (attempts >= 1) expect(back + 1).toBe(attempts)
      else expect(back).toBe(0)
    })))

  it("busy polls never use up retries (§8): any number of claims each followed by a deferral leaves the attempts as they were", () =>
    fc.assert(fc.property(fc.integer({ min: 0, max: 1000 }), fc.integer({ min: 0, max: 50 }), (start, polls) => {
      let attempts = start
      for (let i = 0; i < polls; i++) attempts = giveBackAttempt(attempts + 1)
      expect(attempts).toBe(start)
    })))

  it("the example of §8: four busy polls with max_retries 1 leave attempts at 0, so the job is never dead", () => {
    const maxRetries = 1
    let attempts = 0
    for (let poll = 0; poll < 4; poll++) {
      attempts = giveBackAttempt(attempts + 1) // the claim counts an attempt; the deferral gives it back
      expect(attempts).toBe(0)
      expect(attempts).toBeLessThanOrEqual(maxRetries) // a later failure would still be retried (§6)
    }
  })
})

describe("§3 Expiry: a lease is free for take-over only once its expiry is strictly in the past", () => {
  it("at its very expiry it is still held; a millisecond later it is free, and stays free", () =>
    fc.assert(
      fc.property(fc.integer({ min: -1e12, max: 1e13 }), fc.integer({ min: 1, max: 1e12 }), (expiresAt, later) => {
        expect(isExpired(expiresAt, expiresAt)).toBe(false)
        expect(isExpired(expiresAt, expiresAt - later)).toBe(false)
        expect(isExpired(expiresAt, expiresAt + 1)).toBe(true)
        expect(isExpired(expiresAt, expiresAt + later)).toBe(true)
      })
    ))

  it("a free lease may be taken by anyone, our own at any time, another's only once expired", () =>
    fc.assert(
      fc.property(
        instants,
        fc.integer({ min: -1e9, max: 1e9 }),
        fc.string({ minLength: 1, maxLength: 64 }),
        fc.string({ minLength: 1, maxLength: 64 }),
        (expiresAt, offset, owner, other) => {
          fc.pre(owner !== other)
          const now = expiresAt + offset
          const row = { name: "n", owner, host: null, acquiredAt: expiresAt - 60 * SECOND, expiresAt }
          expect(mayAcquire(undefined, other, now)).toBe(true)
          expect(mayAcquire(row, owner, now)).toBe(true)
          expect(mayAcquire(row, other, now)).toBe(isExpired(expiresAt, now))
        }
      )
    ))

  it("the examples: held until 100, free at 101", () => {
    const row = { name: "n", owner: "a", host: null, acquiredAt: 0, expiresAt: 100 }
    expect(mayAcquire(undefined, "b", 50)).toBe(true)
    expect(mayAcquire(row, "b", 100)).toBe(false)
    expect(mayAcquire(row, "b", 101)).toBe(true)
    expect(mayAcquire(row, "a", 50)).toBe(true)
  })
})

describe("epoch-ms values as the drivers return them (§1: BIGINT)", () => {
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
