/**
 * Group commit for the SQL job store: calls made at the same time by a worker's fibers go to
 * the database together, as one statement, instead of one statement each.
 *
 * No call waits for a timer. The first call starts a batch at once; calls that arrive while a
 * batch is in flight queue up and go together in the next batch, sent as soon as the current one
 * returns. An idle worker therefore sends batches of one with no added delay, and a busy one
 * sends fewer, larger statements: the busier, the larger.
 */
import { Effect, Exit } from "effect"
import { type OneShot, unsafeMakeOneShot } from "../../infra/oneShot.ts"

/** Submits one item and waits for its own result. */
export type Batched<I, O, E> = (item: I) => Effect.Effect<O, E>

/**
 * Makes a batcher around `run`, which gets up to `max` items and must return one result per
 * item, in order. A failure of `run` fails every item of that batch.
 */
export const makeBatcher = <I, O, E>(
  max: number,
  run: (items: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<O>, E>
): Batched<I, O, E> => {
  interface Entry {
    readonly item: I
    readonly done: OneShot<O, E>
  }
  let pending: Array<Entry> = []
  let running = false

  const runBatch = (batch: ReadonlyArray<Entry>) =>
    Effect.map(Effect.exit(run(batch.map((e) => e.item))), (exit) =>
      batch.forEach((e, i) =>
        e.done.complete(
          Exit.flatMap(exit, (results) =>
            i < results.length
              ? Exit.succeed(results[i]!)
              : Exit.die(new Error(`batch returned ${results.length} results for ${batch.length} items`)))
        )
      ))

  // Runs batches until nothing is pending, then lets the next call start again.
  const drain: Effect.Effect<void> = Effect.suspend(() => {
    if (pending.length === 0) {
      running = false
      return Effect.void
    }
    const batch = pending.slice(0, max)
    pending = pending.slice(max)
    return Effect.zipRight(runBatch(batch), drain)
  })

  return (item) =>
    Effect.suspend(() => {
      const done = unsafeMakeOneShot<O, E>()
      pending.push({ item, done })
      if (running) return done.await
      running = true
      // The batch runs in a fiber of its own, so it completes even if the caller that started
      // it is interrupted meanwhile (its item's result is then simply not awaited).
      return Effect.zipRight(Effect.forkDaemon(drain), done.await)
    })
}
