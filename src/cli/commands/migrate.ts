/**
 * `leasehold migrate`, `migrate status`, `migrate unlock [--force]`: the project's own schema
 * migrations and their lock (docs/behaviour.md §10; ../actions/migrate.ts).
 */
import * as Command from "@effect/cli/Command"
import * as opt from "../options.ts"
import { action } from "./action.ts"

const load = () => import("../actions/migrate.ts")

const migrateStatus = Command.make("status", opt.common, action(load, (m) => m.status)).pipe(
  Command.withDescription("Show applied and pending migrations and the migration lock.")
)

const migrateUnlock = Command.make(
  "unlock",
  { ...opt.common, force: opt.flag("force", "Remove the lock even if it is live (a migration may be running).") },
  action(load, (m) => m.unlock)
).pipe(Command.withDescription("Remove an expired migration lock (a live one only with --force)."))

/** The subcommands of `migrate`. */
export const migrateSubcommands = [migrateStatus, migrateUnlock] as const

/** `migrate` applies pending migrations; its subcommands report and repair the lock. */
export const migrate = Command.make("migrate", opt.common, action(load, (m) => m.run)).pipe(
  Command.withDescription("Apply pending migrations (creates an SQLite file that does not exist yet)."),
  Command.withSubcommands(migrateSubcommands)
)
