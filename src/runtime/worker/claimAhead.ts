/**
 * How far a long-running worker claims ahead of its runners (./longRunning.ts, docs/behaviour.md
 * §9): by how many jobs its runners started lately, so quick jobs are claimed in large batches
 * and slow ones are not held back from other workers.
 */

/** The window of recent starts that sets how many jobs are claimed ahead (ms). */
export const CLAIM_AHEAD_MS = 20

/** At most this many times `concurrency` jobs are claimed ahead of the runners. */
export const MAX_AHEAD_FACTOR = 9

/** The start times of a worker's last attempts, as many as it remembers. */
export interface StartTimes {
  /** An attempt started at `at` (the worker's Clock, ms). */
  readonly add: (at: number) => void
  /** How many of the remembered starts were at `from` or later. */
  readonly since: (from: number) => number
}

/** Remembers the last `size` start times (a ring: the oldest is forgotten first). */
export const makeStartTimes = (size: number): StartTimes => {
  const times = new Array<number>(Math.max(1, size)).fill(Number.NEGATIVE_INFINITY)
  let next = 0
  return {
    add: (at) => {
      times[next] = at
      next = (next + 1) % times.length
    },
    since: (from) => {
      // Newest first; the times were added in Clock order, so the first older one ends the count.
      let n = 0
      for (let i = 1; i <= times.length; i++) {
        if (times[(next - i + times.length) % times.length]! < from) break
        n++
      }
      return n
    }
  }
}
