/** Host rules (docs/behaviour.md §9): whether a host is draining, whether it is gone. */

/** The drain fields of a hosts row. */
export interface DrainFields {
  readonly draining: boolean
  /** Epoch ms when the drain ends by itself; null: it lasts until resumed. */
  readonly drainExpiresAt: number | null
}

/**
 * Whether a host with these fields is draining at `now`: marked draining and not yet expired.
 * A drain that expires at `now` is over.
 */
export const isDraining = (host: DrainFields, now: number): boolean =>
  host.draining && (host.drainExpiresAt === null || host.drainExpiresAt > now)

/**
 * How long a host may go unseen before it counts as gone. A long-running worker refreshes its
 * row at every reap (every 15 s by default; src/runtime/worker/options.ts), so 5 minutes is
 * twenty missed refreshes, not a slow one.
 */
export const GONE_AFTER_MS = 5 * 60_000

/** Whether a host last seen at `lastSeenAt` is gone at `now` (not seen for `GONE_AFTER_MS`). */
export const isGone = (host: { readonly lastSeenAt: number }, now: number): boolean =>
  now - host.lastSeenAt > GONE_AFTER_MS
