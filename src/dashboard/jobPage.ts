/**
 * The dashboard's page of one job (`/jobs/:id`): why it is not running (or what it is doing, or
 * how it ended) in one sentence, every column, the payload pretty-printed, its attempts (the
 * running one first, then the history of ended ones), the last error, and the lease its attempt
 * holds or waits for.
 */
import { Clock, Effect, Option } from "effect"
import { type AttemptOutcome, MAX_HISTORY } from "../core/history.ts"
import type { JobRow } from "../core/model.ts"
import { JobStore } from "../ports/JobStore.ts"
import { explainRow } from "../runtime/explain.ts"
import { duration } from "./format.ts"
import { type Html, html, type Part } from "./html.ts"
import {
  actionButton,
  leaseTable,
  type Page,
  type PageContext,
  PageError,
  readLeases,
  statusBadge,
  table,
  when
} from "./parts.ts"

/** A payload as indented JSON when it parses, else as stored. */
const pretty = (payload: string): string => {
  try {
    return JSON.stringify(JSON.parse(payload), null, 2)
  } catch {
    return payload
  }
}

const outcomeBadge: Record<AttemptOutcome, string> = {
  completed: "completed",
  failed: "failed",
  dead: "failed",
  interrupted: "interrupted",
  cancelled: "cancelled"
}

const none = html`<span class="none">–</span>`

/**
 * The attempt a processing job is running, as a row of the attempts table: its number, when it
 * was claimed and the host that claimed it (the columns src/core/history.ts `attemptRecord`
 * records when it ends). Undefined for a job that is not processing.
 */
const runningAttempt = (r: JobRow, now: number): ReadonlyArray<Part> | undefined =>
  r.status !== "processing" ? undefined : [
    r.attempts,
    when(r.updatedAt, now),
    none,
    html`running for ${duration(now - r.updatedAt)}`,
    html`<span class="status status-processing">running</span>`,
    r.claimedBy,
    none
  ]

/** The job's attempts, newest first: the running one, then the ended ones its history keeps. */
const attempts = (r: JobRow, now: number): Html => {
  const running = runningAttempt(r, now)
  return html`${
    r.history.length < MAX_HISTORY || r.history[0]?.attempt === 1 ?
      "" :
      html`<p class="note">The last ${MAX_HISTORY} attempts; older ones are not kept.</p>`
  }${
    table(
      ["attempt", "started", "ended", "took", "outcome", "host", "error"],
      [
        ...(running === undefined ? [] : [running]),
        ...[...r.history].reverse().map((a) => [
          a.attempt,
          when(a.startedAt, now),
          when(a.endedAt, now),
          duration(a.endedAt - a.startedAt),
          html`<span class="status status-${outcomeBadge[a.outcome]}">${a.outcome}</span>`,
          a.host,
          a.error === null ? none : html`<span class="error lines">${a.error}</span>`
        ])
      ],
      "No attempt has ended yet."
    )
  }`
}

/**
 * `/jobs/:id`: the sentence of `Job.explain` (the CLI's `jobs why` prints the same), every
 * column, the payload pretty-printed, its attempts, the last error, and the lease its attempt
 * holds. The claim (host and token) is shown only while the job is processing:
 * a job back to pending keeps the columns of its last attempt, whose host the attempts table shows.
 */
export const job = (ctx: PageContext, id: string) =>
  Effect.gen(function*() {
    const store = yield* JobStore
    const now = yield* Clock.currentTimeMillis
    const found = yield* store.get(id)
    if (Option.isNone(found)) return yield* Effect.fail(new PageError(404, `no job with id ${JSON.stringify(id)}`))
    const r: JobRow = found.value
    const why = yield* explainRow(r)
    const leases = yield* readLeases
    const claimed = r.status === "processing"
    const held = r.claimToken === null ? [] : leases.filter((l) => l.owner === r.claimToken)
    const waitingOn = r.leaseName === null ? [] : leases.filter((l) => l.name === r.leaseName)
    const fields: ReadonlyArray<readonly [string, Part]> = [
      ["id", html`<span class="mono">${r.id}</span>`],
      ["type", r.name],
      ["queue", r.queue],
      ["status", statusBadge(r.status)],
      ["attempts", `${r.attempts} of ${r.maxRetries + 1}`],
      ["priority", r.priority],
      ["unique key", html`<span class="mono">${r.uniqueKey}</span>`],
      ["run at", when(r.runAt, now)],
      ["created", when(r.createdAt, now)],
      ["updated", when(r.updatedAt, now)],
      ["completed", when(r.completedAt, now)],
      ["failed", when(r.failedAt, now)],
      ["claimed by", claimed ? r.claimedBy : null],
      ["claim token", claimed && r.claimToken !== null ? html`<span class="mono">${r.claimToken}</span>` : null],
      ["last heartbeat", when(r.heartbeatAt, now)],
      ["stale after", when(r.staleAt, now)],
      ["timeout", r.claimTimeout === null ? null : `${r.claimTimeout}s`],
      ["waits for lease", r.leaseName === null ? null : html`<span class="mono">${r.leaseName}</span>`]
    ]
    const path = `/jobs/${encodeURIComponent(r.id)}`
    const dead = r.status === "failed" || r.status === "interrupted" || r.status === "cancelled"
    const unfinished = r.status === "pending" || r.status === "processing"
    const actions = [
      dead ? actionButton(ctx, `${path}/retry`, "Retry") : "",
      unfinished
        ? actionButton(ctx, `${path}/cancel`, "Cancel", {
          confirm: `Cancel the ${r.status} job ${r.name} ${r.id}?` +
            (r.status === "processing" ? " Its running attempt stops at its next heartbeat." : "")
        })
        : "",
      dead
        ? actionButton(ctx, `${path}/discard`, "Discard", {
          confirm: `Delete the ${
            r.status === "cancelled" ? "cancelled" : "dead"
          } job ${r.name} ${r.id}? This cannot be undone.`,
          after: "/jobs?status=" + r.status
        })
        : ""
    ]
    return {
      title: `Job ${r.id}`,
      body: html`<h1>Job <span class="mono">${r.id}</span></h1>
<p class="why" id="why"><strong>Why:</strong> ${why.message}</p>
<div class="actions">${actions}</div>
<dl class="fields">${fields.map(([k, v]) => html`<div><dt>${k}</dt><dd>${v ?? none}</dd></div>`)}</dl>
<h2>Payload</h2><pre class="payload">${pretty(r.payload)}</pre>
<h2>Attempts</h2><section id="attempts">${attempts(r, now)}</section>
<h2>Last error</h2>${
        r.lastError === null ? html`<p class="empty">None.</p>` : html`<pre class="error">${r.lastError}</pre>`
      }
<h2>Lease</h2>${
        leaseTable(
          ctx,
          [...held, ...waitingOn.filter((l) => !held.includes(l))],
          now,
          r.status === "processing" ? "Its attempt holds no lease." : "No lease."
        )
      }`
    } satisfies Page
  })
