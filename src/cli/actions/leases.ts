/** What `leases list | clear` do (declared in ../commands/leases.ts, loaded only to run). */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { isExpired, type LeaseRow } from "../../core/lease.ts"
import { JobLeases } from "../../ports/JobStore.ts"
import { withStore } from "../database.ts"
import { CliError, inHuman, iso, print, table } from "../format.ts"
import type { Common } from "../options.ts"

/** A lease as JSON: ISO-8601 times. */
const leaseJson = (r: LeaseRow) => ({ ...r, acquiredAt: iso(r.acquiredAt), expiresAt: iso(r.expiresAt) })

/** `leases list`. Before the first migration there is no lease table: an error saying to migrate (../database.ts). */
export const list = (c: Common) =>
  withStore(
    c,
    { create: false },
    Effect.gen(function*() {
      const leases = yield* JobLeases
      const rows = yield* leases.list
      const now = yield* Clock.currentTimeMillis
      yield* print(
        c,
        rows.map(leaseJson),
        (width) =>
          table(
            rows.map((r) => ({ ...r, expiresIn: inHuman(r.expiresAt - now) })),
            ["name", "owner", "host", "expiresIn"],
            { keep: ["name"], width }
          )
      )
    })
  )

/** The values of `leases clear`. */
export interface ClearConfig extends Common {
  readonly name: string
  readonly force: boolean
}

/**
 * `leases clear`: only an expired lease unless forced; the release is fenced on the owner read,
 * so a lease that changed hands meanwhile is left alone.
 */
export const clear = (c: ClearConfig) =>
  withStore(
    c,
    { create: false },
    Effect.gen(function*() {
      const leases = yield* JobLeases
      const now = yield* Clock.currentTimeMillis
      const row = yield* leases.read(c.name)
      if (Option.isNone(row)) return yield* new CliError({ message: `no lease named ${JSON.stringify(c.name)}` })
      const live = !isExpired(row.value.expiresAt, now)
      if (live && !c.force) {
        return yield* new CliError({
          message: `lease ${c.name} is live (held by ${row.value.owner} on ${row.value.host ?? "?"}, expires in ${
            inHuman(row.value.expiresAt - now)
          }); use --force to clear it anyway`
        })
      }
      const removed = yield* leases.release({
        name: c.name,
        owner: row.value.owner,
        expiredBefore: c.force ? undefined : now
      })
      if (!removed) return yield* new CliError({ message: `lease ${c.name} changed hands meanwhile; not cleared` })
      yield* print(c, { cleared: c.name }, () => `cleared lease ${c.name}${live ? " (it was live)" : ""}`)
    })
  )
