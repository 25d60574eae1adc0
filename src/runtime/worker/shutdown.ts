/**
 * The long-running worker's graceful shutdown (docs/behaviour.md §9), run when its scope closes:
 * it stops claiming, hands back the claimed jobs no runner started, lets running attempts finish
 * (and outcomes still being written land) within the grace period, then interrupts them and
 * hands them back at once (./handBack.ts).
 */
import { type Duration, Effect, Fiber, Option, Queue } from "effect"
import type { Doorbell } from "./doorbell.ts"
import type { HandBack } from "./handBack.ts"
import type { Pipeline } from "./pipeline.ts"
import type { Runners } from "./runners.ts"

/** The worker's fibers and parts the shutdown stops, all made by `make` (./longRunning.ts). */
export interface ShutdownParts {
  readonly host: string
  /** How long running attempts may take to finish, and then to stop. */
  readonly grace: Duration.Duration
  readonly bell: Doorbell
  readonly pipeline: Pipeline
  readonly hands: HandBack
  readonly claiming: Fiber.RuntimeFiber<unknown, unknown>
  readonly running: Runners
  readonly reaper: Fiber.RuntimeFiber<unknown, unknown>
  readonly maintenance: Fiber.RuntimeFiber<unknown, unknown> | undefined
  readonly listener: Fiber.RuntimeFiber<unknown, unknown>
}

/**
 * Stops the worker: the claimer, reaper, retention passes and listener first; then the claimed
 * jobs no runner started are handed back, and the attempts are waited for within the grace
 * period. Those still running then are interrupted and handed back; one whose perform does not
 * stop within another grace period is left to the reaper, and its lease to expire.
 */
export const shutdown = (
  { bell, claiming, grace, hands, host, listener, maintenance, pipeline, reaper, running }: ShutdownParts
): Effect.Effect<void> =>
  Effect.gen(function*() {
    const { attempts, runners } = running
    yield* bell.stop
    yield* Queue.offer(pipeline.slotFreed, undefined)
    yield* Fiber.interrupt(reaper)
    if (maintenance !== undefined) yield* Fiber.interrupt(maintenance)
    yield* Fiber.interrupt(listener)
    // Finalizers run uninterruptibly: a wait must be made interruptible for its timeout to cut it.
    const within = <A>(effect: Effect.Effect<A>) =>
      Effect.timeout(Effect.interruptible(effect), grace).pipe(Effect.option)
    // A claim in flight comes back first, so what it claimed is given back rather than left
    // to the reaper; then the claimed jobs no runner has started go back to pending.
    if (Option.isNone(yield* within(Fiber.await(claiming)))) yield* Fiber.interrupt(claiming)
    const unstarted = pipeline.ready.takeAll()
    pipeline.room.buffered -= unstarted.length
    pipeline.ready.shutdown()
    yield* hands.handBack(unstarted.map((b) => b.job))
    // Attempts whose runner has moved on may still be writing their outcome: waited for too.
    const allEnded = Effect.zipRight(Fiber.awaitAll(runners), Effect.suspend(() => Fiber.awaitAll([...attempts])))
    if (Option.isNone(yield* within(allEnded))) {
      yield* Effect.logWarning(
        `worker ${host}: attempts still running after the grace period; interrupting them and handing them back`
      )
      // An attempt whose perform does not stop within another grace period is not handed
      // back: it is left to the reaper, and its lease to expire.
      yield* within(Effect.zipRight(Fiber.interruptAll([...attempts]), Fiber.interruptAll(runners)))
      yield* hands.handBack([])
    }
    yield* Effect.logInfo(`worker ${host} stopped`)
  })
