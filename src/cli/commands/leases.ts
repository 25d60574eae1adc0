/** `leasehold leases list | clear <name> [--force]`: the job lease table (docs/behaviour.md §3, §8). */
import { Args, Command, Options } from "@effect/cli"
import { Clock, Effect, Option } from "effect"
import { JobLeases } from "../../ports/JobStore.ts"
import { isExpired } from "../../core/lease.ts"
import { withStore } from "../database.ts"
import { CliError, inHuman, print, table } from "../format.ts"
import { common } from "../options.ts"

// Before the first migration there is no lease table: that is an empty list, not an error.
const leasesList = Command.make("list", common, (c) =>
  withStore(
    c,
    Effect.gen(function*() {
      const leases = yield* JobLeases
      const rows = (yield* leases.tableExists) ? yield* leases.list : []
      const now = yield* Clock.currentTimeMillis
      yield* print(
        c,
        rows,
        () =>
          table(rows.map((r) => ({ ...r, expiresIn: inHuman(r.expiresAt - now) })), [
            "name",
            "owner",
            "host",
            "expiresIn"
          ])
      )
    })
  ))

// Clears only an expired lease unless forced; the release is fenced on the owner read, so a
// lease that changed hands meanwhile is left alone.
const leasesClear = Command.make("clear", {
  ...common,
  name: Args.text({ name: "lease-name" }),
  force: Options.boolean("force")
}, (c) =>
  withStore(
    c,
    Effect.gen(function*() {
      const leases = yield* JobLeases
      const now = yield* Clock.currentTimeMillis
      const row = (yield* leases.tableExists) ? yield* leases.read(c.name) : Option.none()
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
  ))

/** `leases` and its subcommands. */
export const leases = Command.make("leases").pipe(Command.withSubcommands([leasesList, leasesClear]))
