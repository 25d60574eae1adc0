/**
 * The long-running worker's record of the jobs it has claimed per key (`claim_lease`, known at
 * enqueue), from their claim to the end of their attempt (docs/behaviour.md §9, "A busy key in
 * one worker"). A key whose every slot this worker's jobs fill, with one more claimed to run
 * next (./keyGate.ts: it waits for the lease), is one the claim skips, up to the lowest priority
 * among those jobs (a better job is still claimed, and takes the waiting one's place); and the
 * claim takes at most one job per key (core's ClaimInput `perKey`). Without this, a worker
 * draining a busy key claimed its jobs only to defer them, each a claim, a deferral and a
 * hand-off later. When a job of a skipped key ends, the key is freed and the
 * claimer told to claim its next job (one claim of the keys freed meanwhile alone, ClaimInput
 * `perKey.only`), so it is claimed while the current one runs, with no look at the rest of the
 * queue, which has not changed for it.
 *
 * Only the claim's choice rests on this record; the lease still decides who runs.
 */
import type { ClaimInput, JobRow } from "../../core/model.ts"

/** How many recently skipped keys are remembered at most (the rest are simply claimed). */
const MAX_KEYS = 1_000

/** The most freed keys one claim names (the rest wait for the next one). */
export const MAX_FREED_PER_CLAIM = 100

/** One worker's claimed jobs per key. */
export interface KeyClaims {
  /** What the next claim skips: keys with every slot held here and one more job claimed. */
  readonly skip: () => NonNullable<ClaimInput["perKey"]>["skip"]
  /** `job` was claimed; its type allows `limit` runs of its key at once. */
  readonly claimed: (job: JobRow, limit: number) => void
  /**
   * The attempt of `job` ended. True: its key was skipped until now and is freed, so its next job
   * is to be claimed (`takeFreed`).
   */
  readonly ended: (job: JobRow) => boolean
  /** Whether a key is freed and its next job not yet claimed. */
  readonly hasFreed: () => boolean
  /** Up to `MAX_FREED_PER_CLAIM` freed keys, for a claim of those keys alone; no longer freed. */
  readonly takeFreed: () => ReadonlyArray<string>
  /** A claim of the whole queue takes the freed keys' jobs too: none is freed any more. */
  readonly clearFreed: () => void
}

/** The claimed-jobs count of one worker. */
export const makeKeyClaims = (): KeyClaims => {
  // Per key: its slots, and the priorities of its jobs claimed here and not yet ended.
  const keys = new Map<string, { readonly limit: number; readonly live: Array<number> }>()
  const full = (k: { readonly limit: number; readonly live: Array<number> }) => k.live.length > k.limit
  // Keys that had room again since the claimer last took them.
  const freed = new Set<string>()
  return {
    skip: () => {
      const out: Array<{ readonly lease: string; readonly priority: number }> = []
      for (const [lease, k] of keys) if (full(k)) out.push({ lease, priority: Math.min(...k.live) })
      return out
    },
    claimed: (job, limit) => {
      const name = job.claimLease
      if (name === null || (keys.size >= MAX_KEYS && !keys.has(name))) return
      const k = keys.get(name)
      if (k === undefined) keys.set(name, { limit, live: [job.priority] })
      else k.live.push(job.priority)
    },
    ended: (job) => {
      const name = job.claimLease
      const k = name === null ? undefined : keys.get(name)
      if (k === undefined) return false
      const was = full(k)
      k.live.splice(k.live.indexOf(job.priority), 1)
      if (k.live.length === 0) keys.delete(name!)
      if (!was || full(k)) return false
      freed.add(name!)
      return true
    },
    hasFreed: () => freed.size > 0,
    takeFreed: () => {
      const taken = [...freed].slice(0, MAX_FREED_PER_CLAIM)
      for (const key of taken) freed.delete(key)
      return taken
    },
    clearFreed: () => freed.clear()
  }
}
