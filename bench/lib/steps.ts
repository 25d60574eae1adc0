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
  /**
   * With `detail`, the steps counted since `clear` (over every start and stop since) by kind and
   * source (the instruction's op code and the first characters of the function it runs), most
   * first; empty without.
   */
  readonly breakdown: () => ReadonlyArray<readonly [string, number]>
  /** Empties the breakdown. */
  readonly clear: () => void
}

// An instruction's kind and source: its op code, and the function it runs (a continuation, a
// sync body), which names the code that built it.
const sourceOf = (instruction: unknown): string => {
  const i = instruction as { _op?: string; effect_instruction_i0?: unknown; effect_instruction_i1?: unknown }
  const f = i.effect_instruction_i1 ?? i.effect_instruction_i0
  return `${i._op ?? "?"} ${typeof f === "function" ? String(f).replace(/\s+/g, " ").slice(0, 120) : ""}`.trim()
}

/**
 * A new step counter, off until `start`. `detail` also keeps each step's kind and source
 * (`breakdown`): where a job's steps come from, at the price of a string per step.
 */
export const makeStepCounter = (options: { readonly detail?: boolean } = {}): StepCounter => {
  let on = false
  let steps = 0
  const bySource = new Map<string, number>()
  const detail = options.detail === true
  class Counting extends Supervisor.AbstractSupervisor<void> {
    readonly value = Effect.void
    override onEffect(_fiber: unknown, instruction: unknown): void {
      if (!on) return
      steps++
      if (detail) {
        const key = sourceOf(instruction)
        bySource.set(key, (bySource.get(key) ?? 0) + 1)
      }
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
    },
    breakdown: () => [...bySource].sort((a, b) => b[1] - a[1]),
    clear: () => bySource.clear()
  }
}
