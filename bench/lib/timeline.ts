/**
 * Marks for the driver timeline (./timeline.mjs, a preload): the bench's latency scenarios mark
 * an enqueue's call and its handler's start, the hot-key scenario each handler's start and end,
 * and the preload times node-postgres's sends and replies between them. Without the preload a
 * mark is a no-op.
 */

/**
 * What a scenario marks: just before an enqueue call, and at its job handler's start (latency);
 * a handler's start and end (hot key: from one job's end to the next one's start is a hand-off).
 */
export type TimelineMark = "enqueue" | "start" | "end"

/** Records `what` now, when ./timeline.mjs is loaded. */
export const mark = (what: TimelineMark): void =>
  (globalThis as { __benchTimeline?: (what: TimelineMark) => void }).__benchTimeline?.(what)
