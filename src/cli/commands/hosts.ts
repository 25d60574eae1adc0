/** `leasehold drain --host h [--expires-in]`, `resume --host h`, `status`: worker hosts (docs/behaviour.md §9; ../actions/hosts.ts). */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as opt from "../options.ts"
import { action } from "./action.ts"

const load = () => import("../actions/hosts.ts")

const host = opt.text("host", "name", "The worker host, as `status` shows it.")

/** Marks a host draining; without `--expires-in`, or with 0, the drain lasts until resumed (§9). */
export const drain = Command.make(
  "drain",
  {
    ...opt.common,
    host,
    expiresIn: opt.duration("expires-in", "End the drain after this long. Default: when `resume` is run.").pipe(
      Options.optional
    )
  },
  action(load, (m) => m.drain)
).pipe(Command.withDescription("Stop a host's workers from starting jobs (they finish what they run)."))

/** Lifts a host's drain. */
export const resume = Command.make("resume", { ...opt.common, host }, action(load, (m) => m.resume)).pipe(
  Command.withDescription("Let a drained host start jobs again.")
)

/** Hosts (running jobs, cap, drain, last seen) and job counts per queue and status. */
export const status = Command.make("status", opt.common, action(load, (m) => m.status)).pipe(
  Command.withDescription("Show worker hosts and job counts per queue and status.")
)
