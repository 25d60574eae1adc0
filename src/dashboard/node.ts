/**
 * The dashboard on node:http: a `(req, res, next?)` handler for `http.createServer` or an Express
 * app (`app.use("/jobs", handler)`: Express's `req.baseUrl` tells the dashboard where it is
 * mounted, so its links stay under it). Each answer carries `Server-Timing: app;dur=<ms>`, the
 * time the dashboard took to build it.
 */
import type { SqlClient } from "@effect/sql/SqlClient"
import { Duration, Effect, Layer, ManagedRuntime, Runtime } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"
import { clientLayerForUrl } from "../adapters/clients.ts"
import * as SqlJobInsights from "../adapters/sql/JobInsights.ts"
import * as SqlJobStore from "../adapters/sql/JobStore.ts"
import { type LoggerOptions, loggerLayer, loggerProblem, makeLogger } from "../runtime/logging.ts"
import { type DashboardServices, handle } from "./app.ts"

/** A node:http request handler; `next` (Express) receives an error the dashboard could not answer. */
export type NodeHandler = (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void) => void

/** Where the dashboard is mounted and its action token. */
export interface HandlerOptions {
  /**
   * The path the dashboard is mounted at (`/admin/jobs`). Default: Express's `req.baseUrl`, or
   * the root.
   */
  readonly basePath?: string | undefined
  /** The action token; empty or undefined: read-only. */
  readonly token?: string | undefined
}

const headerOf = (req: IncomingMessage) => (name: string): string | undefined => {
  const v = req.headers[name]
  return Array.isArray(v) ? v[0] : v
}

/** The node:http handler over a runtime that provides the dashboard's services. */
export const nodeHandler = (runtime: Runtime.Runtime<DashboardServices>, options: HandlerOptions = {}): NodeHandler => {
  const run = Runtime.runPromise(runtime)
  return (req, res, next) => {
    const mounted = options.basePath ?? (req as { baseUrl?: string }).baseUrl ?? ""
    const base = mounted.replace(/\/+$/, "")
    const request = { method: req.method ?? "GET", url: req.url ?? "/", header: headerOf(req) }
    run(Effect.timed(handle({ base, token: options.token })(request))).then(
      ([took, response]) => {
        res.writeHead(response.status, {
          ...response.headers,
          "server-timing": `app;dur=${Duration.toMillis(took).toFixed(2)}`
        })
        res.end(request.method === "HEAD" ? undefined : response.body)
      },
      (error: unknown) => {
        if (next !== undefined) return next(error)
        res.writeHead(500, { "content-type": "text/plain; charset=utf-8" })
        res.end("the dashboard failed\n")
      }
    )
  }
}

/** The services the dashboard reads and writes through, over a SqlClient, for one table prefix. */
export const servicesLayer = (prefix?: string): Layer.Layer<DashboardServices, never, SqlClient> =>
  Layer.merge(SqlJobStore.layer({ prefix }), SqlJobInsights.layer({ prefix }))

/** Options of `createDashboard`. */
export interface DashboardOptions extends HandlerOptions {
  /**
   * `postgres://…`, `mysql://…`, `mariadb://…`, or an SQLite file name; only that database's
   * driver is loaded.
   */
  readonly url?: string | undefined
  /** Instead of `url`: a SqlClient layer of the app's own (Effect apps). */
  readonly layer?: Layer.Layer<SqlClient, unknown> | undefined
  /** Table prefix (default `leasehold_`). */
  readonly prefix?: string | undefined
  /** How the dashboard logs (src/runtime/logging.ts): as the Promise API's `logger`. */
  readonly logger?: LoggerOptions | undefined
}

/** A dashboard with its own connection: mount `handler`, and `close` it when the server stops. */
export interface Dashboard {
  readonly handler: NodeHandler
  /** Closes the dashboard's connection (pool). */
  readonly close: () => Promise<void>
}

/**
 * A dashboard on its own connection to the database at `url` (or over `layer`). The token
 * defaults to the `LEASEHOLD_DASHBOARD_TOKEN` environment variable; without one it is read-only.
 * The connection opens on the first request.
 */
export const createDashboard = (options: DashboardOptions): Dashboard => {
  const client = options.layer ?? (options.url === undefined ? undefined : clientLayerForUrl(options.url))
  if (client === undefined) throw new TypeError("createDashboard: give `url` or `layer`")
  const badLogger = loggerProblem(options.logger)
  if (badLogger !== undefined) throw new TypeError(`createDashboard: ${badLogger}`)
  const runtime = ManagedRuntime.make(
    Layer.provide(servicesLayer(options.prefix), client).pipe(
      Layer.provideMerge(
        options.logger === undefined ? Layer.empty : loggerLayer(makeLogger(options.logger), options.logger.level)
      )
    )
  )
  const token = options.token ?? process.env.LEASEHOLD_DASHBOARD_TOKEN
  let handler: Promise<NodeHandler> | undefined
  return {
    handler: (req, res, next) => {
      handler ??= runtime.runtime().then((rt) => nodeHandler(rt, { basePath: options.basePath, token }))
      handler.then((h) => h(req, res, next), (error: unknown) => {
        handler = undefined
        if (next !== undefined) return next(error)
        res.writeHead(503, { "content-type": "text/plain; charset=utf-8" })
        res.end(`the dashboard cannot reach its database: ${error instanceof Error ? error.message : String(error)}\n`)
      })
    },
    close: () => runtime.dispose()
  }
}
