/** `leasehold dashboard [--port] [--host]`: the web dashboard until SIGINT or SIGTERM (../actions/dashboard.ts). */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as opt from "../options.ts"
import { action } from "./action.ts"

/** Serves the dashboard (src/dashboard/) on `--host`:`--port`. */
export const dashboard = Command.make(
  "dashboard",
  {
    ...opt.common,
    port: opt.integer("port", 0, "The port to listen on (0: any free port).", { default: "4000" }).pipe(
      Options.withDefault(4000)
    ),
    host: opt.text(
      "host",
      "address",
      "The address to listen on. Anything but a loopback address shows the queue to the network.",
      { default: "127.0.0.1" }
    ).pipe(Options.withDefault("127.0.0.1"))
  },
  action(() => import("../actions/dashboard.ts"), (m) => m.dashboard)
).pipe(
  Command.withDescription(
    "Serve the web dashboard until SIGINT or SIGTERM; read-only unless LEASEHOLD_DASHBOARD_TOKEN is set."
  )
)
