/**
 * The hand-off order among jobs waiting on one lease, and what a hand-off does to the waiter
 * (src/core/transitions.ts `handOffOrder`, `applyHandOff`).
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import type { JobRow } from "../../src/core/model.ts"
import { applyHandOff, handOffOrder } from "../../src/core/transitions.ts"

const waiter = (id: string, priority: number, createdAt: number) => ({ id, priority, createdAt }) as JobRow
const waiters = fc.uniqueArray(
  fc.record({
    id: fc.uuid(),
    priority: fc.integer({ min: -2, max: 2 }),
    createdAt: fc.integer({ min: 0, max: 3 })
  }),
  { minLength: 1, maxLength: 12, selector: (w) => w.id }
).map((ws) => ws.map((w) => waiter(w.id, w.priority, w.createdAt)))

describe("handOffOrder", () => {
  it("higher priority first, then the oldest, then the lowest id", () => {
    const a = waiter("b", 1, 5)
    const b = waiter("a", 0, 1)
    const c = waiter("c", 1, 5)
    const d = waiter("a", 1, 5)
    expect([a, b, c, d].sort(handOffOrder).map((w) => w.id)).toEqual(["a", "b", "c", "a"])
    expect([a, b, c, d].sort(handOffOrder)[0]).toBe(d)
  })

  it("one best waiter whatever the order the waiters are read in, even when they share a created_at", () =>
    fc.assert(fc.property(waiters, fc.infiniteStream(fc.nat()), (ws, draws) => {
      const shuffled = [...ws].sort(() => (draws.next().value % 3) - 1)
      expect([...shuffled].sort(handOffOrder)[0]).toBe([...ws].sort(handOffOrder)[0])
    })))
})

describe("applyHandOff", () => {
  const row = (runAt: number, createdAt: number) => ({ id: "w", priority: 0, runAt, createdAt }) as JobRow

  it("makes the waiter due in its place: run_at its enqueue time, not the hand-off's now", () => {
    // Deferred at 1,000 until 31,000, handed off at 5,000: due as of its enqueue at 100, so a
    // claim (oldest run_at first) takes it before jobs of its key enqueued after it.
    expect(applyHandOff(row(31_000, 100), 5_000).runAt).toBe(100)
    // A waiter already due keeps its run_at if that is earlier still.
    expect(applyHandOff(row(50, 100), 5_000).runAt).toBe(50)
    // Never later than now (a created_at ahead of this worker's clock).
    expect(applyHandOff(row(31_000, 9_000), 5_000).runAt).toBe(5_000)
  })

  it("never makes run_at later, and never leaves it after now or after created_at", () => {
    const ms = fc.integer({ min: 0, max: 1_000_000 })
    fc.assert(fc.property(ms, ms, ms, (runAt, createdAt, now) => {
      const after = applyHandOff(row(runAt, createdAt), now).runAt
      expect(after).toBeLessThanOrEqual(runAt)
      expect(after).toBeLessThanOrEqual(now)
      expect(after).toBeLessThanOrEqual(createdAt)
      expect([runAt, now, createdAt]).toContain(after)
    }))
  })
})
