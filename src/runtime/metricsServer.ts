/**
 * Serving the scrape (./metrics.ts `render`): a node:http handler for an app's own server (or
 * Express), and a server of its own (`leasehold worker --metrics-port`).
 */
import { Effect, Runtime, type Scope } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { PROMETHEUS_CONTENT_TYPE } from "../infra/prometheus.ts"
import { JobStore } from "../ports/JobStore.ts"
import { render } from "./metrics.ts"

/**
 * What the handler reads of a node:http request. Structural, so that leasehold's public types
 * never name node:http: an app compiled without @types/node still type-checks (test/e2e/package.test.ts).
 */
export interface MetricsRequest {
  readonly method?: string | undefined
}

/** What the handler writes to a node:http response (a `ServerResponse` is one). */
export interface MetricsResponse {
  writeHead(status: number, headers?: Record<string, string>): MetricsResponse
  end(body?: string): unknown
}

/** A node:http request handler, as `handler` gives it (Express accepts it as middleware too). */
export type MetricsHandler = (request: MetricsRequest, response: MetricsResponse) => void

/**
 * A node:http handler that answers every request it is given with a scrape (`render`); mount it
 * on the path you choose (`/metrics`). It runs on the runtime it is built in, so its JobStore
 * is that runtime's.
 */
export const handler: Effect.Effect<MetricsHandler, never, JobStore> = Effect.map(
  Effect.runtime<JobStore>(),
  (runtime) => {
    const run = Runtime.runPromise(runtime)
    return (request, response) => {
      if (request.method !== "GET" && request.method !== "HEAD") {
        response.writeHead(405, { allow: "GET, HEAD" }).end()
        return
      }
      run(render).then(
        (text) => {
          response.writeHead(200, { "content-type": PROMETHEUS_CONTENT_TYPE })
          response.end(request.method === "HEAD" ? undefined : text)
        },
        (e) => response.writeHead(500).end(String(e))
      )
    }
  }
)

/** Where `serve` listens. */
export interface ServeOptions {
  /** The TCP port (0: any free one; the server's `port` says which). */
  readonly port: number
  /** The address to listen on (default 127.0.0.1; 0.0.0.0 for every interface). */
  readonly host?: string | undefined
}

/** A running metrics server. */
export interface MetricsServer {
  /** The port it listens on. */
  readonly port: number
}

/**
 * Serves `/metrics` on a server of its own for as long as the scope is open (any other path:
 * 404). Fails when the port cannot be listened on (in use, not allowed).
 */
export const serve = (options: ServeOptions): Effect.Effect<MetricsServer, Error, JobStore | Scope.Scope> =>
  Effect.gen(function*() {
    const handle = yield* handler
    const server = createServer((request, response) => {
      const path = (request.url ?? "/").split("?")[0]
      if (path === "/metrics") handle(request, response)
      else response.writeHead(404, { "content-type": "text/plain" }).end("not found: try /metrics\n")
    })
    yield* Effect.acquireRelease(
      Effect.async<void, Error>((resume) => {
        server.once("error", (e) => resume(Effect.fail(e)))
        server.listen(options.port, options.host ?? "127.0.0.1", () => resume(Effect.void))
      }),
      () =>
        Effect.async<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeAllConnections()
        })
    )
    return { port: (server.address() as AddressInfo).port }
  })
