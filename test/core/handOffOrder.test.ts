/** The hand-off order among jobs waiting on one lease (src/core/transitions.ts `handOffOrder`). */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import type { JobRow } from "../../src/core/model.ts"
import { handOffOrder } from "../../src/core/transitions.ts"

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
