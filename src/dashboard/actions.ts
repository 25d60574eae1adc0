/**
 * The dashboard's actions (POST only, behind the token checked in ./app.ts): retry a dead job,
 * drain or resume a host, clear an expired lease. Each answers one line saying what it did, or
 * an `ActionError` saying why it did nothing.
 */
import { Clock, Effect, Option } from "effect"
import { isExpired } from "../core/lease.ts"
import { JobLeases, JobStore } from "../ports/JobStore.ts"
import * as Worker from "../runtime/Worker.ts"
import { duration } from "./format.ts"

/** An action that changed nothing: 404 (no such thing) or 409 (not in a state that allows it). */
export class ActionError {
  constructor(readonly status: 400 | 404 | 409, readonly message: string) {}
}

/** Puts a failed or interrupted job back to pending, due now, with fresh attempts. */
export const retryJob = (id: string) =>
  Effect.gen(function*() {
    const store = yield* JobStore
    const ok = yield* store.retryDead(id, yield* Clock.currentTimeMillis)
    if (!ok) return yield* Effect.fail(new ActionError(409, `no failed or interrupted job with id ${id}`))
    return `job ${id} is pending again`
  })

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
    const row = (yield* leases.tableExists) ? yield* leases.read(name) : Option.none()
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
