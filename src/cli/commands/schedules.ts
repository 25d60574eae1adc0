/** `leasehold schedules`: the recurring jobs' schedules (docs/behaviour.md §14; ../actions/schedules.ts). */
import * as Command from "@effect/cli/Command"
import * as opt from "../options.ts"
import { action } from "./action.ts"

/** Every schedule with its cron, time zone, catch-up policy, last and next slot. */
export const schedules = Command.make(
  "schedules",
  opt.common,
  action(() => import("../actions/schedules.ts"), (m) => m.schedules)
).pipe(Command.withDescription("Show the recurring jobs' schedules: cron, time zone, last and next slot."))
