/**
 * The Effect runtime's steps (every instruction a fiber evaluates), counted while `counting` is
 * on, for scenario 10 (bench/scenarios.ts). Unlike CPU time on a shared machine, a count of steps
 * is the same run after run; a job's steps are most of what Node spends on it (issue 13).
 *
 * A `Supervisor` sees each step only with the `OpSupervision` runtime flag on, which costs time
 * of its own: steps are counted in runs of their own, never in a timed one.
 */
import { Effect, RuntimeFlags, RuntimeFlagsPatch, Supervisor } from "effect"

/** A step counter: `counted(program)` runs `program` (and the fibers it forks) under it. */
export interface StepCounter {
  readonly counted: <A, E, R>(program: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** Starts counting from zero. */
  readonly start: () => void
  /** Stops counting; the steps since `start`. */
  readonly stop: () => number
}

/** A new step counter, off until `start`. */
export const makeStepCounter = (): StepCounter => {
  let on = false
  let steps = 0
  class Counting extends Supervisor.AbstractSupervisor<void> {
    readonly value = Effect.void
    override onEffect(): void {
      if (on) steps++
    }
  }
  const supervisor = new Counting()
  return {
    counted: (program) =>
      Effect.withRuntimeFlagsPatch(
        Effect.supervised(program, supervisor),
        RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision)
      ),
    start: () => {
      steps = 0
      on = true
    },
    stop: () => {
      on = false
      return steps
    }
  }
}
