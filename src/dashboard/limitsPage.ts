/**
 * `/limits`: the limits set live and the pauses (docs/flow-control.md), each with the slots its
 * key, cap or rate holds now, and, with the action token, buttons to pause, resume or clear it
 * (./actions.ts). Limits are set from the command line or the APIs.
 */
import { Clock, Effect } from "effect"
import { capLeaseName, fitLeaseName, isExpired } from "../core/lease.ts"
import type { LimitRow } from "../core/limits.ts"
import { rateLeaseName } from "../core/rate.ts"
import { JobLeases, JobStore } from "../ports/JobStore.ts"
import { duration } from "./format.ts"
import { html, type Part } from "./html.ts"
import { actionButton, type Page, type PageContext, REFRESH_MS, table, when } from "./parts.ts"

/** The lease names whose held slots a row's "in use" counts: its key's, its cap's, its rate's. */
const watched = (row: LimitRow): ReadonlyArray<readonly [string, string]> => {
  if (row.scope === "key") {
    const key = fitLeaseName("key:", row.target)
    return [["running", key], ["rate", rateLeaseName("", key)]]
  }
  if (row.scope === "type") {
    return [["running", capLeaseName(row.target)], ["rate", rateLeaseName(row.target, undefined)]]
  }
  return []
}

/** The path of a row's actions: `/limits/<scope>:<target>`. */
export const limitPath = (row: Pick<LimitRow, "scope" | "target">): string =>
  `/limits/${encodeURIComponent(`${row.scope}:${row.target}`)}`

/** `/limits`. */
export const limits = (ctx: PageContext) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const rows = yield* (yield* JobStore).limits
    const leases = yield* JobLeases
    const held = (yield* leases.tableExists) ? yield* leases.list : []
    // Slots held now per base name (a slot's name is its base, or its base and `#i`).
    const inUse = new Map<string, number>()
    for (const l of held) {
      if (isExpired(l.expiresAt, now)) continue
      const base = l.name.replace(/#\d+$/, "")
      inUse.set(base, (inUse.get(base) ?? 0) + 1)
    }
    const body = table(
      ["scope", "target", "concurrency", "type cap", "rate", "in use", "paused", ""],
      rows.map((r): ReadonlyArray<Part> => [
        r.scope,
        html`<span class="mono">${r.target}</span>`,
        r.concurrency ?? "–",
        r.typeCap ?? "–",
        r.rateLimit === null || r.ratePeriodMs === null ? "–" : `${r.rateLimit} per ${duration(r.ratePeriodMs)}`,
        watched(r).map(([label, name]) => `${label} ${inUse.get(name) ?? 0}`).join(", ") || "–",
        r.paused
          ? html`since ${when(r.pausedAt, now)}${r.pausedBy === null ? "" : html` by ${r.pausedBy}`}`
          : "no",
        html`${
          r.paused
            ? actionButton(ctx, `${limitPath(r)}/resume`, "Resume")
            : actionButton(ctx, `${limitPath(r)}/pause`, "Pause")
        } ${
          actionButton(ctx, `${limitPath(r)}/clear`, "Clear", {
            confirm: `Clear the limits of ${r.scope} ${r.target}?`
          })
        }`
      ]),
      "No limits set live: every job type runs under its own declaration."
    )
    return {
      title: "Limits",
      refresh: REFRESH_MS,
      body: html`<h1>Limits</h1>
<p class="note">Overrides of the job types' declared limits, and pauses, applied by every worker within a second. Set them with <code>leasehold limits set</code> or <code>Limits.set</code>; pausing holds the jobs pending, resuming makes them due at once.</p>
${body}`
    } satisfies Page
  })
