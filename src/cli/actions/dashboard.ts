/** What `dashboard` does (declared in ../commands/dashboard.ts, loaded only to run). */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import * as SqlJobInsights from "../../adapters/sql/JobInsights.ts"
import type { DashboardServices } from "../../dashboard/app.ts"
import { nodeHandler } from "../../dashboard/node.ts"
import { withStore } from "../database.ts"
import { CliError, print } from "../format.ts"
import type { Common } from "../options.ts"
import { CurrentSession } from "../terminal.ts"

/** The environment variable that holds the action token. */
export const TOKEN_ENV = "LEASEHOLD_DASHBOARD_TOKEN"

/** The values of `dashboard`. */
export interface DashboardConfig extends Common {
  readonly port: number
  readonly host: string
}

/**
 * `dashboard`: serves the dashboard on node:http until interrupted (SIGINT, SIGTERM), then
 * closes the server. Actions only with `LEASEHOLD_DASHBOARD_TOKEN` set.
 */
export const dashboard = (c: DashboardConfig) =>
  withStore(
    c,
    { create: false },
    Effect.gen(function*() {
      const token = (yield* CurrentSession).io.env[TOKEN_ENV]
      const runtime = yield* Effect.runtime<DashboardServices>()
      const server = createServer(nodeHandler(runtime, { token }))
      yield* Effect.acquireRelease(
        Effect.async<void, CliError>((resume) => {
          server.once("error", (e) =>
            resume(Effect.fail(new CliError({ message: `cannot listen on ${c.host}:${c.port}: ${e.message}` }))))
          server.listen(c.port, c.host, () =>
            resume(Effect.void))
        }),
        () =>
          Effect.async<void>((resume) => {
            server.close(() => resume(Effect.void))
            server.closeAllConnections()
          })
      )
      const { address, port } = server.address() as AddressInfo
      const url = `http://${address.includes(":") ? `[${address}]` : address}:${port}`
      const mode = token === undefined || token === "" ? "read-only" : "actions enabled"
      yield* print(c, { url, actions: mode !== "read-only" }, () =>
        `leasehold dashboard on ${url} (${mode}); Ctrl-C to stop`)
      return yield* Effect.never
    }).pipe(Effect.scoped, Effect.provide(SqlJobInsights.layer({ prefix: c.prefix })))
  )
