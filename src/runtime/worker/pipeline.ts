/**
 * What a long-running worker's claimer and runners share (./claimer.ts, ./runners.ts): the
 * claimed jobs not yet started, how many jobs are where, when runners started their last jobs,
 * and the signal a freed runner gives a claimer waiting for room.
 *
 * The claimer keeps some claimed jobs ahead of the runners, so a runner that ends an attempt
 * starts the next one without waiting for a claim (claims and runs in lock-step left Node and
 * the database each waiting on the other): `concurrency`, or as many as the runners started in
 * the last CLAIM_AHEAD_MS if more, up to MAX_AHEAD_FACTOR × `concurrency` (./claimAhead.ts).
 * Quick jobs are so claimed in batches that last the runners a short while, while slow ones are
 * not held back from other workers.
 */
import { Effect, Queue } from "effect"
import type { JobRow } from "../../core/model.ts"
import { makeStartTimes, MAX_AHEAD_FACTOR, type StartTimes } from "./claimAhead.ts"
import { makeReadyBuffer, type ReadyBuffer } from "./readyBuffer.ts"

/** A claimed job in the buffer, with when it was claimed. */
export interface Buffered {
  readonly job: JobRow
  readonly claimedAt: number
}

/** How many jobs are where, as plain counts (the worker's fibers share one thread). */
export interface Room {
  /** Attempts holding a runner. */
  active: number
  /** Claimed jobs in the buffer, not yet started. */
  buffered: number
  /** Claims still to be made for idle runners only, after an attempt deferred on a busy key. */
  contended: number
}

/** The claimed jobs between the claimer and the runners. */
export interface Pipeline {
  /** Claimed jobs not yet started. */
  readonly ready: ReadyBuffer<Buffered>
  readonly room: Room
  /** When the runners started their latest jobs: how far ahead to claim. */
  readonly starts: StartTimes
  /** Offered when a runner is freed, so a claimer waiting for room looks again. */
  readonly slotFreed: Queue.Queue<void>
}

/** An empty pipeline for `concurrency` runners. */
export const makePipeline = (concurrency: number): Effect.Effect<Pipeline> =>
  Effect.map(Queue.sliding<void>(1), (slotFreed) => ({
    ready: makeReadyBuffer<Buffered>(),
    room: { active: 0, buffered: 0, contended: 0 },
    starts: makeStartTimes(concurrency * MAX_AHEAD_FACTOR),
    slotFreed
  }))
