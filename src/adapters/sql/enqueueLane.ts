/**
 * How enqueues made outside a transaction reach the database (docs/behaviour.md §16): through at
 * most `places` connections at once, first come, first served, so the rest of the pool stays
 * free for the worker's statements (src/core/connections.ts). An enqueue that finds a place free
 * goes at once, alone, as it always did. Enqueues that find every place taken wait in line, and
 * when a place frees, the jobs waiting go together, as one multi-row insert of up to
 * `maxTogether` rows; a batch enqueue waiting (`alone`) goes by itself when its turn comes.
 *
 * So a burst of enqueues costs a few statements, not one each, and never more connections than
 * its share: behind a slow database (a slow disk, a lock other clients queue on) the enqueues'
 * throughput grows with the line instead of the line growing for ever.
 *
 * A statement of several jobs that the database refuses (one row it would not take) is sent again
 * one job at a time, so that only that job's caller gets the error; one that fails otherwise (the
 * connection was lost or refused, a deadlock retried past its bound) fails every enqueue it
 * carried, as a group commit does (./batching.ts), since each of them alone would meet the same.
 * A statement's jobs are also bounded in bytes (`maxBytes`), so that one never grows past what the
 * server takes in one packet although each job alone fits.
 *
 * Jobs sent together run in the first one's fiber context (its tracer and span, its logger and
 * log annotations): the statement is traced under the first caller's enqueue.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Cause, Effect, Exit, Option, Runtime } from "effect"
import { Buffer } from "node:buffer"
import type { NewJob } from "../../core/model.ts"
import { type OneShot, unsafeMakeOneShot } from "../../infra/oneShot.ts"
import type { InsertResult } from "../../ports/JobStore.ts"

/** What a lane needs. */
export interface EnqueueLaneOptions {
  /** Connections enqueues may hold at once (at least one). */
  readonly places: number
  /** Most jobs of one statement. */
  readonly maxTogether: number
  /** Most payload bytes of one statement of several jobs (a larger job goes alone). */
  readonly maxBytes: number
  /**
   * Free a place on the event loop's next turn (`setImmediate`), not when its statement ends: for
   * a database whose statements run on the event loop's own thread (SQLite). There an enqueue
   * runs from start to end without a pause, so enqueues all ready at once would run one after
   * another, each blocking the loop, and a fiber woken meanwhile (the worker's claimer, a timer)
   * would wait for all of them. Freed a turn later, a place lets whatever else is ready run first.
   */
  readonly freeOnNextTurn: boolean
  /** Inserts one job. */
  readonly one: (job: NewJob) => Effect.Effect<InsertResult, SqlError>
  /** Inserts several jobs of different callers in one statement: a result per job, in order. */
  readonly together: (jobs: ReadonlyArray<NewJob>) => Effect.Effect<ReadonlyArray<InsertResult>, SqlError>
  /** Whether the database refused a statement of several jobs for its content: then each goes alone. */
  readonly refused: (error: SqlError) => boolean
}

/** The lane of one store. */
export interface EnqueueLane {
  /** Inserts `job`: at once when a place is free, else with the jobs waiting beside it. */
  readonly insert: (job: NewJob) => Effect.Effect<InsertResult, SqlError>
  /** Runs `effect` (a batch enqueue) on a place of its own, at once or when its turn comes. */
  readonly alone: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

/** A job in line: taken into a statement, or gone (its caller was interrupted first). */
interface Job {
  readonly kind: "job"
  readonly job: NewJob
  readonly done: OneShot<InsertResult, SqlError>
  /** Its caller's fiber context, which a statement it leads runs in. */
  readonly runtime: Runtime.Runtime<never>
  state: "waiting" | "taken" | "gone"
}

/** A batch enqueue in line: given a place, or gone. */
interface Alone {
  readonly kind: "alone"
  resume?: ((entered: Effect.Effect<void>) => void) | undefined
  state: "waiting" | "placed" | "gone"
}

/** A lane for one store. */
export const makeEnqueueLane = (options: EnqueueLaneOptions): EnqueueLane => {
  let free = Math.max(1, Math.floor(options.places))
  // The line, in order; `head` is its first entry still to look at (shifting per place freed
  // would copy the array). `waiting` counts its entries still waiting.
  let line: Array<Job | Alone> = []
  let head = 0
  let waiting = 0

  // The jobs waiting at the head of the line, oldest first, up to a batch enqueue waiting behind
  // them, at most `maxTogether` and `maxBytes` (the first whatever its size), taken out of it.
  const takeJobs = (): Array<Job> => {
    const taken: Array<Job> = []
    let bytes = 0
    for (let i = head; i < line.length && taken.length < options.maxTogether; i++) {
      const entry = line[i]!
      if (entry.state !== "waiting") continue
      if (entry.kind === "alone") break
      const size = Buffer.byteLength(entry.job.payload)
      if (taken.length > 0 && bytes + size > options.maxBytes) break
      bytes += size
      entry.state = "taken"
      waiting--
      taken.push(entry)
    }
    return taken
  }

  // A place freed: to the first entry still waiting (a batch enqueue, or the jobs waiting, which
  // go together from a fiber of their own), else back to the lane.
  const freePlace = (): void => {
    while (head < line.length && line[head]!.state !== "waiting") head++
    // A line that never empties is cut now and then, so the entries let through do not pile up.
    if (head >= 1024 && head * 2 >= line.length) {
      line = line.slice(head)
      head = 0
    }
    const first = line[head]
    if (first === undefined) {
      line = []
      head = 0
      free++
      return
    }
    if (first.kind === "alone") {
      head++
      waiting--
      first.state = "placed"
      first.resume?.(Effect.void)
      return
    }
    const jobs = takeJobs()
    Runtime.runFork(jobs[0]!.runtime, send(jobs))
  }
  const release = options.freeOnNextTurn
    ? Effect.sync(() => void setImmediate(freePlace))
    : Effect.sync(freePlace)

  // Jobs taken from the line, in one statement (or, refused together, one each), each told its
  // own result; then the place goes on.
  const alone = (j: Job) =>
    Effect.flatMap(Effect.exit(options.one(j.job)), (exit) => Effect.sync(() => j.done.complete(exit)))
  const send = (jobs: ReadonlyArray<Job>): Effect.Effect<void> =>
    Effect.ensuring(
      jobs.length === 1 ? alone(jobs[0]!) : Effect.flatMap(
        Effect.exit(options.together(jobs.map((j) => j.job))),
        (exit) =>
          Exit.isFailure(exit) && Option.exists(Cause.failureOption(exit.cause), options.refused)
            ? Effect.forEach(jobs, alone, { discard: true })
            : Effect.sync(() =>
              jobs.forEach((j, i) =>
                j.done.complete(Exit.flatMap(exit, (results) =>
                  i < results.length
                    ? Exit.succeed(results[i]!)
                    : Exit.die(new Error(`enqueue: ${results.length} results for ${jobs.length} jobs`))))
              )
            )
      ),
      release
    )

  const vacant = () => free > 0 && waiting === 0

  return {
    insert: (job) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.withFiberRuntime<InsertResult, SqlError>((fiber, status) => {
          if (vacant()) {
            free--
            return Effect.ensuring(restore(options.one(job)), release)
          }
          const runtime = Runtime.make({
            context: fiber.currentContext,
            runtimeFlags: status.runtimeFlags,
            fiberRefs: fiber.getFiberRefs()
          })
          const entry: Job = { kind: "job", job, done: unsafeMakeOneShot(), runtime, state: "waiting" }
          line.push(entry)
          waiting++
          // Interrupted before its statement took it, it leaves the line; once taken, its row is
          // written with the others whether or not anyone waits for the answer.
          return Effect.onInterrupt(restore(entry.done.await), () =>
            Effect.sync(() => {
              if (entry.state !== "waiting") return
              entry.state = "gone"
              waiting--
            }))
        })
      ),
    alone: (effect) =>
      Effect.uninterruptibleMask((restore) => {
        if (vacant()) {
          free--
          return Effect.ensuring(restore(effect), release)
        }
        const entry: Alone = { kind: "alone", state: "waiting" }
        line.push(entry)
        waiting++
        const placed = Effect.async<void>((resume) => {
          if (entry.state === "placed") resume(Effect.void)
          else entry.resume = resume
        })
        // Interrupted while in line it leaves it; given a place meanwhile (its wake-up and the
        // interruption raced), it passes the place on.
        const abandon = Effect.suspend(() => {
          if (entry.state === "placed") return release
          if (entry.state === "waiting") waiting--
          entry.state = "gone"
          return Effect.void
        })
        return Effect.zipRight(
          Effect.onInterrupt(restore(placed), () => abandon),
          Effect.ensuring(restore(effect), release)
        )
      })
  }
}
