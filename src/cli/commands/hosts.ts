/** `leasehold drain --host h [--expires-in]`, `resume --host h`, `status`: worker hosts (docs/behaviour.md §9). */
import { Command, Options } from "@effect/cli"
import { Clock, Duration, Effect, Option } from "effect"
import { JobStore } from "../../ports/JobStore.ts"
import { isDraining } from "../../core/hosts.ts"
import * as Worker from "../../runtime/Worker.ts"
import { withStore } from "../database.ts"
import { inHuman, iso, print, table } from "../format.ts"
import { common, durationFlag } from "../options.ts"

const hostOption = Options.text("host").pipe(Options.withDescription("the worker host (see `status`)"))

/** Marks a host draining; without `--expires-in`, or with 0, the drain lasts until resumed (§9). */
export const drain = Command.make("drain", {
  ...common,
  host: hostOption,
  expiresIn: Options.text("expires-in").pipe(Options.optional)
}, (c) =>
  withStore(
    c,
    Effect.gen(function*() {
      const expiresIn = Option.isSome(c.expiresIn)
        ? yield* durationFlag("expires-in", c.expiresIn.value)
        : undefined
      yield* Worker.drain({ host: c.host, expiresIn })
      yield* print(c, { host: c.host, draining: true }, () =>
        `host ${c.host} is draining${
          expiresIn !== undefined ? ` for ${Duration.format(Duration.millis(expiresIn))}` : ""
        }`)
    })
  ))

/** Lifts a host's drain. */
export const resume = Command.make(
  "resume",
  { ...common, host: hostOption },
  (c) =>
    withStore(
      c,
      Effect.gen(function*() {
        yield* Worker.resume({ host: c.host })
        yield* print(c, { host: c.host, draining: false }, () => `host ${c.host} resumed`)
      })
    )
)

/** Hosts (running jobs, cap, drain, last seen) and job counts per queue and status. */
export const status = Command.make("status", common, (c) =>
  withStore(
    c,
    Effect.gen(function*() {
      const store = yield* JobStore
      const now = yield* Clock.currentTimeMillis
      const hosts = yield* store.listHosts
      const counts = yield* store.counts
      const running = new Map<string, number>()
      for (const r of yield* store.list({ status: "processing", limit: 10_000 })) {
        running.set(r.claimedBy ?? "?", (running.get(r.claimedBy ?? "?") ?? 0) + 1)
      }
      const hostRows = hosts.map((h) => ({
        host: h.host,
        running: running.get(h.host) ?? 0,
        cap: h.maxConcurrent || "-",
        draining: isDraining(h, now) ? (h.drainExpiresAt ? `until ${iso(h.drainExpiresAt)}` : "yes") : "no",
        lastSeen: `${inHuman(now - h.lastSeenAt)} ago`,
        version: h.codeVersion
      }))
      yield* print(c, { hosts: hostRows, counts }, () =>
        [
          table(hostRows, ["host", "running", "cap", "draining", "lastSeen", "version"]),
          "",
          table(counts, ["queue", "status", "count"])
        ].join("\n"))
    })
  ))
