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

/** What `status` shows for a host: `up`, `draining`, or `gone` (stopped refreshing its row). */
export type HostState = "up" | "draining" | "gone"

/** The state of a host with these fields at `now`; a host not seen for `GONE_AFTER_MS` is gone, draining or not. */
export const hostState = (host: DrainFields & { readonly lastSeenAt: number }, now: number): HostState =>
  isGone(host, now) ? "gone" : isDraining(host, now) ? "draining" : "up"

/**
 * Whether retention may delete a host row: not seen since `seenBefore`, and not draining (a
 * drain is kept until it is lifted or expires, so a stopped host that restarts still honours it).
 */
export const mayPruneHost = (host: DrainFields & { readonly lastSeenAt: number }, seenBefore: number, now: number) =>
  host.lastSeenAt < seenBefore && !isDraining(host, now)
