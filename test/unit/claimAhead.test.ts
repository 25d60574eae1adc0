/** How many recent starts a long-running worker counts to claim ahead (src/runtime/worker/claimAhead.ts). */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { makeStartTimes } from "../../src/runtime/worker/claimAhead.ts"

describe("makeStartTimes", () => {
  it("counts the remembered starts at or after a time; nothing before any start", () => {
    const s = makeStartTimes(3)
    expect(s.since(0)).toBe(0)
    s.add(10)
    s.add(20)
    expect(s.since(15)).toBe(1)
    expect(s.since(10)).toBe(2)
    s.add(30)
    s.add(40)
    // Only the last three are remembered.
    expect(s.since(0)).toBe(3)
    expect(s.since(31)).toBe(1)
    expect(s.since(41)).toBe(0)
  })

  it("agrees with a count over the last `size` starts, for starts added in Clock order", () =>
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 30 }),
        fc.integer({ min: -1, max: 80 }),
        (size, gaps, from) => {
          const s = makeStartTimes(size)
          const added: Array<number> = []
          let t = 0
          for (const gap of gaps) {
            t += gap
            added.push(t)
            s.add(t)
          }
          expect(s.since(from)).toBe(added.slice(-size).filter((x) => x >= from).length)
        }
      )
    ))
})
