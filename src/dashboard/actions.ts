/**
 * The dashboard's actions (POST only, behind the token checked in ./app.ts): retry, cancel or
 * discard a job, drain or resume a host, clear an expired lease. Each answers one line saying what it did, or
 * an `ActionError` saying why it did nothing.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Clock, Effect, Option } from "effect"
import type { JobFilterError, LimitInputError } from "../core/errors.ts"
import { isExpired } from "../core/lease.ts"
import { JobLeases, JobStore } from "../ports/JobStore.ts"
import * as Cancel from "../runtime/cancel.ts"
import * as Limits from "../runtime/limits.ts"
import { discardDead, retryDead } from "../runtime/deadJobs.ts"
import * as Worker from "../runtime/Worker.ts"
import { duration } from "./format.ts"

/** An action that changed nothing: 404 (no such thing) or 409 (not in a state that allows it). */
export class ActionError {
  constructor(readonly status: 400 | 404 | 409, readonly message: string) {}
}

/** The statuses a job may be retried or discarded in: dead, or cancelled (../runtime/deadJobs.ts). */
const ENDED: ReadonlyArray<string> = ["failed", "interrupted", "cancelled"]

/**
 * Applies `apply` (retry or discard by id, ../runtime/deadJobs.ts) to a dead or cancelled job.
 * No such job: 404; one in another status, or that left it meanwhile: 409.
 */
const onEndedJob = (
  id: string,
  verb: string,
  apply: Effect.Effect<number, SqlError | JobFilterError, JobStore>
) =>
  Effect.gen(function*() {
    const found = yield* (yield* JobStore).get(id)
    if (Option.isNone(found)) return yield* Effect.fail(new ActionError(404, `no job with id ${id}`))
    const status = found.value.status
    if (!ENDED.includes(status)) {
      return yield* Effect.fail(
        new ActionError(409, `job ${id} is ${status}: only a failed, interrupted or cancelled job can be ${verb}`)
      )
    }
    const n = yield* Effect.catchTag(apply, "JobFilterError", (e) => Effect.fail(new ActionError(400, e.message)))
    // It was retried or discarded between the read and the write.
    if (n === 0) return yield* Effect.fail(new ActionError(409, `job ${id} changed meanwhile; not ${verb}`))
  })

/** Puts a failed, interrupted or cancelled job back to pending, due now, with fresh attempts. */
export const retryJob = (id: string) =>
  Effect.as(onEndedJob(id, "retried", retryDead({ ids: [id] })), `job ${id} is pending again`)

/**
 * Cancels a pending or processing job (../runtime/cancel.ts): a pending one never runs, a running
 * one stops at its next heartbeat. No such job: 404; a finished one: 409.
 */
export const cancelJob = (id: string) =>
  Cancel.cancel(id).pipe(
    Effect.map((done) =>
      done.wasRunning
        ? `job ${id} is cancelled; its running attempt stops at its next heartbeat`
        : `job ${id} is cancelled`
    ),
    Effect.catchTags({
      JobNotFoundError: (e) => Effect.fail(new ActionError(404, e.message)),
      JobNotCancellableError: (e) => Effect.fail(new ActionError(409, e.message))
    })
  )

/** Deletes a failed, interrupted or cancelled job. No such job: 404; one in another status: 409. */
export const discardJob = (id: string) =>
  Effect.as(onEndedJob(id, "discarded", discardDead({ ids: [id] })), `discarded job ${id}`)

/** Marks a host draining until resumed. */
export const drainHost = (host: string) =>
  Effect.as(
    Effect.catchTag(Worker.drain({ host }), "WorkerConfigError", (e) => Effect.fail(new ActionError(400, e.message))),
    `host ${host} is draining`
  )

/** Lifts a host's drain. */
export const resumeHost = (host: string) =>
  Effect.as(
    Effect.catchTag(Worker.resume({ host }), "WorkerConfigError", (e) => Effect.fail(new ActionError(400, e.message))),
    `host ${host} resumed`
  )

/**
 * Clears a lease only once it has expired (a live one may still be protecting a running job),
 * fenced on the owner read and on expiry, so one that changed hands meanwhile stays.
 */
export const clearLease = (name: string) =>
  Effect.gen(function*() {
    const leases = yield* JobLeases
    const now = yield* Clock.currentTimeMillis
    const row = yield* leases.read(name)
    if (Option.isNone(row)) return yield* Effect.fail(new ActionError(404, `no lease named ${JSON.stringify(name)}`))
    if (!isExpired(row.value.expiresAt, now)) {
      return yield* Effect.fail(
        new ActionError(409, `lease ${name} is live (expires in ${duration(row.value.expiresAt - now)}); not cleared`)
      )
    }
    const removed = yield* leases.release({ name, owner: row.value.owner, expiredBefore: now })
    if (!removed) return yield* Effect.fail(new ActionError(409, `lease ${name} changed hands meanwhile; not cleared`))
    return `cleared lease ${name}`
  })

/** A limits row's scope and target from its action path's `<scope>:<target>`; a bad one is a 400. */
const limitTarget = (scoped: string): Effect.Effect<Limits.LimitTarget, ActionError> => {
  const at = scoped.indexOf(":")
  const scope = scoped.slice(0, at)
  const target = scoped.slice(at + 1)
  return at < 0 || !["type", "queue", "key"].includes(scope)
    ? Effect.fail(new ActionError(400, `not a limits row: ${scoped}`))
    : Effect.succeed({ [scope]: target } as unknown as Limits.LimitTarget)
}

const limitInput = <A, R>(effect: Effect.Effect<A, LimitInputError | SqlError, R>) =>
  Effect.catchTag(effect, "LimitInputError", (e) => Effect.fail(new ActionError(400, e.message)))

/** Pauses a type, queue or key (`<scope>:<target>`): its jobs stay pending, none starts. */
export const pauseLimit = (scoped: string) =>
  Effect.flatMap(
    limitTarget(scoped),
    (t) => Effect.as(limitInput(Limits.pause(t, "dashboard")), `${scoped} is paused`)
  )

/** Lifts a pause: the jobs it held are due at once. */
export const resumeLimit = (scoped: string) =>
  Effect.flatMap(limitTarget(scoped), (t) => Effect.as(limitInput(Limits.resume(t)), `${scoped} is resumed`))

/** Removes a row: the declared limits apply again. No such row: 404. */
export const clearLimit = (scoped: string) =>
  Effect.flatMap(limitTarget(scoped), (t) =>
    Effect.flatMap(limitInput(Limits.clear(t)), (cleared) =>
      cleared
        ? Effect.succeed(`${scoped}: the declared limits apply again`)
        : Effect.fail(new ActionError(404, `no limits set for ${scoped}`))))
