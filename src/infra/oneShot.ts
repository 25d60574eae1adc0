/**
 * A one-shot result cell for the worker's hot path: completed once, awaited once.
 *
 * Why not `Deferred`: Effect 3's `Deferred.make` copies the whole Effect prototype into every
 * new instance (an object spread), which makes make + succeed + await many times dearer than
 * this cell, and the worker makes several per job.
 * A cell holds one waiter, which is all a batch entry or an attempt needs.
 */
import { Effect, type Exit } from "effect"

/** A result cell: `complete` sets it (later calls are ignored), `await` waits for it. */
export interface OneShot<A, E> {
  readonly complete: (exit: Exit.Exit<A, E>) => void
  readonly await: Effect.Effect<A, E>
}

/** Makes an empty cell (synchronously: it is plain data until awaited). */
export const unsafeMakeOneShot = <A, E>(): OneShot<A, E> => {
  let result: Exit.Exit<A, E> | undefined
  let waiter: ((effect: Effect.Effect<A, E>) => void) | undefined
  return {
    complete: (exit) => {
      if (result !== undefined) return
      result = exit
      const resume = waiter
      waiter = undefined
      if (resume !== undefined) resume(exit)
    },
    // Interrupted while waiting, the fiber ignores a later resume, so the wait needs no canceler
    // (one is an interruption handler per wait, two per job on the worker's path).
    await: Effect.async<A, E>((resume) => {
      if (result !== undefined) resume(result)
      else waiter = resume
    })
  }
}
