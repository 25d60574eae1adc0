/**
 * Marks for the driver timeline (./timeline.mjs, a preload): the bench's latency scenarios mark
 * an enqueue's call and its handler's start, and the preload times node-postgres's sends and
 * replies between them. Without the preload a mark is a no-op.
 */

/** What a latency scenario marks: just before an enqueue call, and at its job handler's start. */
export type TimelineMark = "enqueue" | "start"

/** Records `what` now, when ./timeline.mjs is loaded. */
export const mark = (what: TimelineMark): void =>
  (globalThis as { __benchTimeline?: (what: TimelineMark) => void }).__benchTimeline?.(what)
