/** Host rules (docs/behaviour.md §9): whether a host is draining. */

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
