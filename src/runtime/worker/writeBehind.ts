/**
 * The long-running worker's outcomes written behind their runners (./runners.ts): an attempt on
 * a database server frees its runner once perform has succeeded, and writes its outcome while
 * the runner starts its next job. At most so many at once: past that, runners wait for writes to
 * land (a long drain otherwise claimed faster than it wrote, and held a great many attempts
 * waiting for their writes).
 */
import { Effect, Exit } from "effect"
import { type OneShot, unsafeMakeOneShot } from "../../infra/oneShot.ts"

/** The count of outcomes being written behind their runners, and the runners waiting for room. */
export interface WriteBehind {
  /** Whether as many outcomes are being written behind as may be (a plain read). */
  readonly full: () => boolean
  /** An attempt freed its runner early: its outcome is written behind it from now on. */
  readonly started: () => void
  /** An outcome written behind its runner landed: every waiting runner looks again. */
  readonly landed: () => void
  /** Waits until fewer than the most outcomes are being written behind. */
  readonly waitForRoom: Effect.Effect<void>
}

/** Room for `max` outcomes written behind their runners. */
export const makeWriteBehind = (max: number): WriteBehind => {
  let behind = 0
  // A cell per waiting runner (a cell holds one waiter); every landed write wakes them all to
  // look again, so one that stopped waiting (interrupted) never swallows another's wake-up.
  const waiters: Array<OneShot<void, never>> = []
  const waitForRoom: Effect.Effect<void> = Effect.suspend(() => {
    if (behind < max) return Effect.void
    const room = unsafeMakeOneShot<void, never>()
    waiters.push(room)
    return Effect.zipRight(room.await, waitForRoom)
  })
  return {
    full: () => behind >= max,
    started: () => {
      behind++
    },
    landed: () => {
      behind--
      for (const waiter of waiters.splice(0)) waiter.complete(Exit.void)
    },
    waitForRoom
  }
}
