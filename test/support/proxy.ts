/**
 * A loopback TCP proxy for outage tests: put it in front of a database server, point a
 * client at its port, then `cut()` the network and `restore()` it, without ever touching the
 * shared server itself.
 */
import { Data, Effect, type Scope } from "effect"
import * as net from "node:net"

/** Where the proxy forwards connections to. */
export interface ProxyTarget {
  readonly host: string
  readonly port: number
}

/** A running proxy. */
export interface TcpProxy {
  /** The port the proxy listens on, on 127.0.0.1. */
  readonly port: number
  /** Resets every open connection (both sides) and refuses new ones until `restore`. */
  readonly cut: () => Effect.Effect<void>
  /** Accepts and forwards new connections again. */
  readonly restore: () => Effect.Effect<void>
  /** How many client connections are open through the proxy now. */
  readonly openConnections: () => Effect.Effect<number>
  /** How many connections the proxy has refused (reset on arrival) while cut, in all. */
  readonly refusedConnections: () => Effect.Effect<number>
}

/** Options of `startProxy`. */
export interface ProxyOptions {
  /** Start in the cut state: every connection is refused until `restore` (default false). */
  readonly cut?: boolean | undefined
}

/** The proxy could not start listening. */
export class ProxyError extends Data.TaggedError("ProxyError")<{ readonly cause: unknown }> {}

/** Closes a socket abruptly: a TCP reset when possible, so the peer sees a broken connection. */
const reset = (socket: net.Socket) => {
  try {
    if (!socket.destroyed && socket.readyState === "open") socket.resetAndDestroy()
    else socket.destroy()
  } catch {
    socket.destroy()
  }
}

/**
 * Starts a proxy on 127.0.0.1 (a random free port) forwarding to `target` (with `cut: true`,
 * refusing every connection until `restore`). It stops, closing every connection through it,
 * when the scope closes.
 */
export const startProxy = (
  target: ProxyTarget,
  options: ProxyOptions = {}
): Effect.Effect<TcpProxy, ProxyError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<{ readonly server: net.Server; readonly proxy: TcpProxy; readonly closeAll: () => void }, ProxyError>(
      (resume) => {
        /** Each open client connection and its upstream connection. */
        const pairs = new Set<readonly [net.Socket, net.Socket]>()
        /** Every socket the proxy has open, refused ones included, so closing never waits on one. */
        const sockets = new Set<net.Socket>()
        let refusing = options.cut === true
        let refused = 0

        const track = (socket: net.Socket) => {
          sockets.add(socket)
          socket.on("close", () => sockets.delete(socket))
        }
        const closeAll = () => {
          for (const socket of sockets) reset(socket)
          sockets.clear()
          pairs.clear()
        }

        const server = net.createServer((client) => {
          client.on("error", () => {})
          track(client)
          if (refusing) {
            refused++
            reset(client)
            return
          }
          const upstream = net.connect({ host: target.host, port: target.port })
          upstream.on("error", () => {})
          track(upstream)
          const pair = [client, upstream] as const
          pairs.add(pair)
          const close = () => {
            if (!pairs.delete(pair)) return
            client.destroy()
            upstream.destroy()
          }
          client.on("error", close).on("close", close)
          upstream.on("error", close).on("close", close)
          client.pipe(upstream)
          upstream.pipe(client)
        })

        const onListenError = (cause: unknown) => resume(Effect.fail(new ProxyError({ cause })))
        server.once("error", onListenError)
        server.listen(0, "127.0.0.1", () => {
          server.off("error", onListenError)
          // Errors after listening (none expected) must not crash the test process.
          server.on("error", () => {})
          const address = server.address() as net.AddressInfo
          resume(Effect.succeed({
            server,
            closeAll,
            proxy: {
              port: address.port,
              cut: () =>
                Effect.sync(() => {
                  refusing = true
                  closeAll()
                }),
              restore: () =>
                Effect.sync(() => {
                  refusing = false
                }),
              openConnections: () => Effect.sync(() => pairs.size),
              refusedConnections: () => Effect.sync(() => refused)
            }
          }))
        })
      }
    ),
    ({ closeAll, server }) =>
      Effect.async<void>((resume) => {
        closeAll()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map(({ proxy }) => proxy))
