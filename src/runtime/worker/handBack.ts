/**
 * What a stopping long-running worker hands back (docs/behaviour.md §9): the jobs it claimed and
 * never started, and, after the grace period, the attempts it interrupted. Each goes back to
 * pending at once, due as before, its attempt given back (no retry counted, no backoff), and
 * every lease it held is released and handed off to the next job waiting on it, all in one
 * store call (`JobStore.handBack`: one statement on PostgreSQL). Without it an interrupted
 * attempt stayed `processing`, holding its key, until the reaper's grace ran out.
 *
 * An attempt is remembered only once its interruption has finished, that is once perform has
 * stopped (./perform.ts waits for it): an attempt that does not stop is left to the reaper and
 * its lease to expire, so a hand-off never lets a second run overlap it. A worker killed with
 * -9 hands nothing back: the reaper covers it as before.
 */
import { Cause, Clock, Effect, Exit } from "effect"
import type { JobRow } from "../../core/model.ts"
import type { JobStoreApi } from "../../ports/JobStore.ts"

/** One stopping worker's hand-back. */
export interface HandBack {
  /**
   * Told how an attempt of `job` ended, once it has (perform stopped): an interrupted one is
   * remembered to be handed back. A plain call, made in the attempt's release.
   */
  readonly ended: (job: JobRow, exit: Exit.Exit<unknown, unknown>) => void
  /**
   * Hands back `unstarted` (claimed, never started) and every interrupted attempt remembered
   * since the last call, in one store call. A failure is logged: what was not handed back
   * stays processing for the reaper.
   */
  readonly handBack: (unstarted: ReadonlyArray<JobRow>) => Effect.Effect<void>
}

/** A hand-back for the worker on `host` over `store`. */
export const makeHandBack = (store: JobStoreApi, host: string): HandBack => {
  let interrupted: Array<JobRow> = []
  return {
    ended: (job, exit) => {
      if (Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause)) interrupted.push(job)
    },
    handBack: (unstarted) =>
      Effect.gen(function*() {
        const running = interrupted
        interrupted = []
        const jobs = [...unstarted, ...running]
        if (jobs.length === 0) return
        const now = yield* Clock.currentTimeMillis
        const done = yield* store.handBack(jobs.map((j) => ({ id: j.id, token: j.claimToken! })), now)
        yield* Effect.logInfo(
          `worker ${host}: handed back ${done.handedBack} of ${jobs.length} jobs (${unstarted.length} claimed but not started, ` +
            `${running.length} interrupted): pending again, attempts given back; ${done.released} leases released, ` +
            `${done.woke} waiting jobs woken`
        )
      }).pipe(Effect.catchAllCause((cause) =>
        Effect.logWarning(`worker ${host}: hand-back failed; the reaper will take those jobs back`, cause)
      ))
  }
}
