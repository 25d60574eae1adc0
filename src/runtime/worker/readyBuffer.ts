/**
 * The long-running worker's buffer of claimed jobs not yet started (./longRunning.ts): the
 * claimer adds what it claimed, a runner takes the oldest, and a runner that finds it empty waits
 * for the next one, which is handed to it directly.
 *
 * Why not Effect's `Queue`: a take is several steps, and a take that waits makes a `Deferred`
 * (dear to make, src/infra/oneShot.ts); an idle worker's runner waited that way for every job,
 * on its latency's path. Here a take of a waiting job is one step, and a wait is one callback.
 */
import { Effect } from "effect"

/** Claimed jobs waiting for a runner. */
export interface ReadyBuffer<A> {
  /** Adds `items`, oldest first; each goes to a waiting runner if there is one. */
  readonly offerAll: (items: ReadonlyArray<A>) => void
  /** The oldest item, or the next one added. After `shutdown`, the taker is interrupted. */
  readonly take: Effect.Effect<A>
  /** The oldest item if one waits, as a plain call: no step of a fiber's. */
  readonly poll: () => A | undefined
  /** Removes and returns every item waiting. */
  readonly takeAll: () => ReadonlyArray<A>
  /** Interrupts the runners waiting, and every later take. */
  readonly shutdown: () => void
}

/** An empty buffer. */
export const makeReadyBuffer = <A>(): ReadyBuffer<A> => {
  let items: Array<A> = []
  let head = 0
  const waiters: Array<(taken: Effect.Effect<A>) => void> = []
  let closed = false
  const poll = (): A | undefined => {
    if (head >= items.length) return undefined
    const item = items[head]!
    head++
    if (head === items.length) {
      items = []
      head = 0
    }
    return item
  }
  const wait = Effect.async<A>((resume) => {
    waiters.push(resume)
    // Interrupted while waiting: no longer a waiter, so nothing is handed to it.
    return Effect.sync(() => {
      const i = waiters.indexOf(resume)
      if (i >= 0) waiters.splice(i, 1)
    })
  })
  return {
    offerAll: (added) => {
      for (const item of added) {
        const waiter = waiters.shift()
        if (waiter !== undefined) waiter(Effect.succeed(item))
        else items.push(item)
      }
    },
    take: Effect.suspend(() => {
      const item = poll()
      if (item !== undefined) return Effect.succeed(item)
      return closed ? Effect.interrupt : wait
    }),
    poll,
    takeAll: () => {
      const all = items.slice(head)
      items = []
      head = 0
      return all
    },
    shutdown: () => {
      closed = true
      for (const waiter of waiters.splice(0)) waiter(Effect.interrupt)
    }
  }
}
