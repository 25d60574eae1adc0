/** What `drain`, `resume` and `status` do (declared in ../commands/hosts.ts, loaded only to run). */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { hostState, isDraining } from "../../core/hosts.ts"
import { JobStore } from "../../ports/JobStore.ts"
import * as Worker from "../../runtime/Worker.ts"
import { withStore } from "../database.ts"
import { inHuman, iso, print, table } from "../format.ts"
import type { Common } from "../options.ts"

/** The values of `drain`. */
export interface DrainConfig extends Common {
  readonly host: string
  readonly expiresIn: Option.Option<number>
}

/** `drain`: without `--expires-in`, or with 0, the drain lasts until resumed (docs/behaviour.md §9). */
export const drain = (c: DrainConfig) =>
  withStore(
    c,
    { create: false },
    Effect.gen(function*() {
      const expiresIn = Option.getOrUndefined(c.expiresIn)
      yield* Worker.drain({ host: c.host, expiresIn })
      yield* print(c, { host: c.host, draining: true }, () =>
        `host ${c.host} is draining${
          expiresIn !== undefined && expiresIn > 0 ? ` for ${Duration.format(Duration.millis(expiresIn))}` : ""
        }`)
    })
  )

/** The values of `resume`. */
export interface ResumeConfig extends Common {
  readonly host: string
}

/** `resume`: lifts a host's drain. */
export const resume = (c: ResumeConfig) =>
  withStore(
    c,
    { create: false },
    Effect.gen(function*() {
      yield* Worker.resume({ host: c.host })
      yield* print(c, { host: c.host, draining: false }, () => `host ${c.host} resumed`)
    })
  )

/**
 * `status`: hosts (state, running jobs, cap, drain, last seen) and job counts per queue and status. The
 * table is for people ("4s ago", "-" for no cap); the JSON has numbers, null and ISO-8601 times.
 */
export const status = (c: Common) =>
  withStore(
    c,
    { create: false },
    Effect.gen(function*() {
      const store = yield* JobStore
      const now = yield* Clock.currentTimeMillis
      const hosts = yield* store.listHosts
      const counts = yield* store.counts
      const running = new Map<string, number>()
      for (const r of yield* store.list({ status: "processing", limit: 10_000 })) {
        running.set(r.claimedBy ?? "?", (running.get(r.claimedBy ?? "?") ?? 0) + 1)
      }
      const hostJson = hosts.map((h) => {
        const draining = isDraining(h, now)
        return {
          host: h.host,
          // gone: it stopped refreshing its row (src/core/hosts.ts), whatever it last said.
          state: hostState(h, now),
          running: running.get(h.host) ?? 0,
          cap: h.maxConcurrent > 0 ? h.maxConcurrent : null,
          draining,
          drainUntil: draining ? iso(h.drainExpiresAt) : null,
          lastSeenAt: iso(h.lastSeenAt),
          startedAt: iso(h.startedAt),
          version: h.codeVersion
        }
      })
      yield* print(c, { hosts: hostJson, counts }, (width) =>
        [
          table(
            hosts.map((h, i) => {
              const j = hostJson[i]!
              return {
                host: j.host,
                state: j.state,
                running: j.running,
                cap: j.cap ?? "-",
                draining: j.draining ? (j.drainUntil === null ? "yes" : `until ${j.drainUntil}`) : "no",
                lastSeen: `${inHuman(now - h.lastSeenAt)} ago`,
                version: j.version
              }
            }),
            ["host", "state", "running", "cap", "draining", "lastSeen", "version"],
            { keep: ["host"], width }
          ),
          "",
          table(counts, ["queue", "status", "count"], { width })
        ].join("\n"))
    })
  )
