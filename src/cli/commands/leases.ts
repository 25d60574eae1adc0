/** `leasehold leases list | clear <name> [--force]`: the job lease table (../actions/leases.ts). */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as opt from "../options.ts"
import { action } from "./action.ts"

const load = () => import("../actions/leases.ts")

const leasesList = Command.make("list", opt.common, action(load, (m) => m.list)).pipe(
  Command.withDescription("List the leases held by running jobs (exclusive jobs and concurrency keys).")
)

const leasesClear = Command.make(
  "clear",
  {
    ...opt.common,
    name: Args.text({ name: "lease-name" }).pipe(Args.withDescription("The lease's name, as `leases list` shows it.")),
    force: opt.flag("force", "Clear the lease even if it is live (its holder may still be running).")
  },
  action(load, (m) => m.clear)
).pipe(Command.withDescription("Clear an expired lease (a live one only with --force)."))

/** The subcommands of `leases`. */
export const leasesSubcommands = [leasesList, leasesClear] as const

/** `leases` and its subcommands. */
export const leases = Command.make("leases").pipe(
  Command.withDescription("Inspect and clear job leases."),
  Command.withSubcommands(leasesSubcommands)
)
