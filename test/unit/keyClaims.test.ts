/**
 * The long-running worker's record of its claimed jobs per key (src/runtime/worker/keyClaims.ts):
 * which keys the next claim skips, and which keys a job's end frees for a claim of their own.
 */
import { describe, expect, it } from "@effect/vitest"
import type { JobRow } from "../../src/core/model.ts"
import { makeKeyClaims, MAX_FREED_PER_CLAIM } from "../../src/runtime/worker/keyClaims.ts"

const job = (claimLease: string | null, priority = 0) => ({ claimLease, priority }) as unknown as JobRow

describe("keyClaims", () => {
  it("a key with every slot held and one more claimed is skipped; its job's end frees it once", () => {
    const claims = makeKeyClaims()
    const [a, b] = [job("k", 2), job("k", 1)]
    claims.claimed(a, 1)
    expect(claims.skip()).toEqual([])
    claims.claimed(b, 1)
    claims.claimed(job(null), 1)
    expect(claims.skip()).toEqual([{ lease: "k", priority: 1 }])
    expect(claims.hasFreed()).toBe(false)
    expect(claims.ended(a)).toBe(true)
    expect(claims.skip()).toEqual([])
    expect(claims.hasFreed()).toBe(true)
    expect(claims.takeFreed()).toEqual(["k"])
    expect(claims.hasFreed()).toBe(false)
    // Not full before it ended: nothing freed.
    expect(claims.ended(b)).toBe(false)
    expect(claims.hasFreed()).toBe(false)
  })

  it("a claim takes at most MAX_FREED_PER_CLAIM freed keys; a look at the whole queue clears them", () => {
    const claims = makeKeyClaims()
    const firsts = Array.from({ length: MAX_FREED_PER_CLAIM + 5 }, (_, i) => job(`k${i}`))
    for (const first of firsts) {
      claims.claimed(first, 1)
      claims.claimed(job(first.claimLease), 1)
    }
    for (const first of firsts) expect(claims.ended(first)).toBe(true)
    expect(claims.takeFreed()).toHaveLength(MAX_FREED_PER_CLAIM)
    expect(claims.takeFreed()).toEqual(firsts.slice(MAX_FREED_PER_CLAIM).map((j) => j.claimLease))
    for (const first of firsts) claims.claimed(first, 1)
    for (const first of firsts) expect(claims.ended(first)).toBe(true)
    claims.clearFreed()
    expect(claims.hasFreed()).toBe(false)
    expect(claims.takeFreed()).toEqual([])
  })
})
