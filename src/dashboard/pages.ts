/**
 * The dashboard's pages: each reads what it shows through the ports and renders it with `html`
 * (./html.ts), which escapes every value. Pages return the content of `<main>`; ./app.ts puts it
 * in the layout (or sends it alone for a live refresh).
 */
import { Clock, Effect, Option } from "effect"
import { MINUTE_MS, minuteOf } from "../core/browse.ts"
import { type AttemptOutcome, MAX_HISTORY } from "../core/history.ts"
import { MAX_LOST_LEASES, RECENT_LOST_LEASES } from "../core/lostLeases.ts"
import { isDraining, isGone } from "../core/hosts.ts"
import { JOB_STATUSES, type JobStatus } from "../core/jobs.ts"
import { isExpired, type LeaseRow } from "../core/lease.ts"
import type { JobRow } from "../core/model.ts"
import { type ActivityMinute, JobInsights, type JobCursor } from "../ports/JobInsights.ts"
import { JobLeases, JobStore } from "../ports/JobStore.ts"
import { ScheduleStore } from "../ports/ScheduleStore.ts"
import { duration, iso, relative } from "./format.ts"
import { Html, html, type Part, raw } from "./html.ts"

/** A page's title and the content of its `<main>`; `refresh`: poll for a fresh `<main>` every so many ms. */
export interface Page {
  readonly title: string
  readonly body: Html
  readonly refresh?: number | undefined
}

/** What a page needs to know about where it is served and what it may offer. */
export interface PageContext {
  /** The path the dashboard is mounted at ("" at the root), for links. */
  readonly base: string
  /** Whether actions are enabled (a token is configured). */
  readonly actions: boolean
}

/** A request the dashboard cannot serve as asked: a 400 or 404 page with one line saying why. */
export class PageError {
  constructor(readonly status: 400 | 404, readonly message: string) {}
}

/** Jobs per page of the jobs list. */
export const PAGE_SIZE = 50

const ACTIVITY_MINUTES = 60

/** The live refresh of the pages that change by themselves, in ms. */
const REFRESH_MS = 5000

/** A time, relative to now, with the exact time in its tooltip. */
const when = (at: number | null, now: number): Html =>
  at === null ?
    html`<span class="none">–</span>` :
    html`<time datetime="${iso(at)}" title="${iso(at)}">${relative(at, now)}</time>`

const statusBadge = (status: string): Html => html`<span class="status status-${status}">${status}</span>`

const table = (head: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<Part>>, empty: string): Html =>
  rows.length === 0
    ? html`<p class="empty">${empty}</p>`
    : html`<table><thead><tr>${head.map((h) => html`<th>${h}</th>`)}</tr></thead><tbody>${
      rows.map((r) => html`<tr>${r.map((c) => html`<td>${c}</td>`)}</tr>`)
    }</tbody></table>`

/**
 * A POST button for an action (./app.ts checks the token); nothing when actions are off.
 * `confirm`: a question to confirm first; `after`: the page to go to once it succeeded (when
 * the current one no longer exists), else the current page is refreshed.
 */
const actionButton = (
  ctx: PageContext,
  path: string,
  label: string,
  options: { readonly confirm?: string; readonly after?: string } = {}
): Html =>
  ctx.actions
    ? html`<button type="button" class="action" data-action="${ctx.base}${path}"${
      options.confirm === undefined ? "" : html` data-confirm="${options.confirm}"`
    }${options.after === undefined ? "" : html` data-after="${ctx.base}${options.after}"`}>${label}</button>`
    : html``

const jobLink = (ctx: PageContext, id: string): Html =>
  html`<a class="mono" href="${ctx.base}/jobs/${encodeURIComponent(id)}">${id}</a>`

// ---------------------------------------------------------------------------------------------
// Overview

/** The activity of the last hour as bars, one per minute: completions, deaths stacked above. */
const chart = (minutes: ReadonlyArray<ActivityMinute>, from: number): Html => {
  const byMinute = new Map(minutes.map((m) => [m.minute, m]))
  const slots = Array.from({ length: ACTIVITY_MINUTES }, (_, i) => {
    const minute = from + i * MINUTE_MS
    return byMinute.get(minute) ?? { minute, completed: 0, failed: 0 }
  })
  const max = Math.max(1, ...slots.map((s) => s.completed + s.failed))
  const height = 120
  const bar = 10
  const scale = (n: number) => Math.round((n / max) * (height - 4) * 10) / 10
  const rects = slots.map((s, i) => {
    const done = scale(s.completed)
    const dead = scale(s.failed)
    const x = i * bar
    return html`<g><title>${iso(s.minute).slice(11, 16)} UTC: ${s.completed} completed, ${s.failed} dead</title>${
      done > 0
        ? html`<rect class="bar-completed" x="${x}" y="${height - done}" width="${bar - 2}" height="${done}"/>`
        : ""
    }${
      dead > 0
        ? html`<rect class="bar-failed" x="${x}" y="${height - done - dead}" width="${bar - 2}" height="${dead}"/>`
        : ""
    }</g>`
  })
  const total = slots.reduce((n, s) => n + s.completed, 0)
  const dead = slots.reduce((n, s) => n + s.failed, 0)
  return html`<figure class="chart"><svg viewBox="0 0 ${
    ACTIVITY_MINUTES * bar
  } ${height}" preserveAspectRatio="none" role="img" aria-label="${`jobs per minute over the last hour: ${total} completed, ${dead} dead`}"><line class="axis" x1="0" y1="${height}" x2="${
    ACTIVITY_MINUTES * bar
  }" y2="${height}"/>${rects}</svg>
<figcaption><span>60 min ago</span><span><span class="key key-completed"></span>${total} completed · <span class="key key-failed"></span>${dead} dead · busiest minute ${max}</span><span>now</span></figcaption></figure>`
}

/** `/`: counts per queue and status, the last hour's activity, the oldest due job, leases and hosts at a glance. */
export const overview = (ctx: PageContext) =>
  Effect.gen(function*() {
    const store = yield* JobStore
    const insights = yield* JobInsights
    const leases = yield* JobLeases
    const now = yield* Clock.currentTimeMillis
    const from = minuteOf(now) - (ACTIVITY_MINUTES - 1) * MINUTE_MS
    const [counts, activity, oldest, hosts, leaseRows] = yield* Effect.all([
      store.counts,
      insights.activity(from),
      insights.oldestDue(now),
      store.listHosts,
      Effect.flatMap(leases.tableExists, (exists) => (exists ? leases.list : Effect.succeed([])))
    ])
    const queues = [...new Set(counts.map((c) => c.queue))]
    const count = (queue: string, status: JobStatus) =>
      counts.find((c) => c.queue === queue && c.status === status)?.count ?? 0
    const cell = (queue: string | undefined, status: JobStatus, n: number): Html =>
      n === 0 ?
        html`<span class="zero">0</span>` :
        html`<a href="${ctx.base}/jobs?status=${status}${
          queue === undefined ? "" : `&queue=${encodeURIComponent(queue)}`
        }">${n}</a>`
    const totals = JOB_STATUSES.map((s) => counts.filter((c) => c.status === s).reduce((n, c) => n + c.count, 0))
    const countsTable = table(
      ["queue", ...JOB_STATUSES],
      [
        ...queues.map((
          q
        ) => [
          html`<a href="${ctx.base}/jobs?queue=${encodeURIComponent(q)}">${q}</a>`,
          ...JOB_STATUSES.map((s) => cell(q, s, count(q, s)))
        ]),
        ...(queues.length > 1
          ? [[html`<strong>all</strong>`, ...JOB_STATUSES.map((s, i) => cell(undefined, s, totals[i]!))]]
          : [])
      ],
      "No jobs yet."
    )
    const live = hosts.filter((h) => !isGone(h, now))
    const stats: ReadonlyArray<readonly [string, Part]> = [
      [
        "oldest due job waiting",
        Option.match(oldest, { onNone: () => "none", onSome: (runAt) => duration(now - runAt) })
      ],
      ["pending", totals[0]],
      ["processing", totals[1]],
      ["leases held", leaseRows.filter((l) => !isExpired(l.expiresAt, now)).length],
      ["hosts up", `${live.length} (${live.filter((h) => isDraining(h, now)).length} draining)`]
    ]
    return {
      title: "Overview",
      refresh: REFRESH_MS,
      body: html`<h1>Overview</h1>
<dl class="stats">${stats.map(([k, v]) => html`<div><dt>${k}</dt><dd>${v}</dd></div>`)}</dl>
<h2>Last hour</h2>${chart(activity, from)}
<h2>Jobs per queue and status</h2>${countsTable}
<p class="updated">Updated ${iso(now)}</p>`
    } satisfies Page
  })

// ---------------------------------------------------------------------------------------------
// Jobs

/** The query of the jobs page, as its URL carries it. */
export interface JobsQuery {
  readonly status?: JobStatus | undefined
  readonly queue?: string | undefined
  readonly name?: string | undefined
  readonly after?: JobCursor | undefined
}

/** A cursor as the URL writes it: `<created_at>.<id>`. */
export const cursorText = (c: JobCursor): string => `${c.createdAt}.${c.id}`

/** Reads the jobs page's query string; a bad status or cursor is a `PageError` (400). */
export const parseJobsQuery = (params: URLSearchParams): Effect.Effect<JobsQuery, PageError> => {
  const text = (key: string) => {
    const v = params.get(key)
    return v === null || v === "" ? undefined : v
  }
  const status = text("status")
  if (status !== undefined && !(JOB_STATUSES as ReadonlyArray<string>).includes(status)) {
    return Effect.fail(
      new PageError(400, `status: expected one of ${JOB_STATUSES.join(", ")}, got ${JSON.stringify(status)}`)
    )
  }
  const after = text("after")
  const cursor = after === undefined ? undefined : /^(\d{1,15})\.(.+)$/s.exec(after)
  if (cursor === null) {
    return Effect.fail(new PageError(400, `after: expected <created_at>.<id>, got ${JSON.stringify(after)}`))
  }
  return Effect.succeed({
    status: status as JobStatus | undefined,
    queue: text("queue"),
    name: text("type"),
    after: cursor === undefined ? undefined : { createdAt: Number(cursor[1]), id: cursor[2]! }
  })
}

const jobsHref = (ctx: PageContext, q: JobsQuery): string => {
  const params = new URLSearchParams()
  if (q.status !== undefined) params.set("status", q.status)
  if (q.queue !== undefined) params.set("queue", q.queue)
  if (q.name !== undefined) params.set("type", q.name)
  if (q.after !== undefined) params.set("after", cursorText(q.after))
  const search = params.toString()
  return `${ctx.base}/jobs${search === "" ? "" : `?${search}`}`
}

const firstLine = (text: string | null, max = 80): string | null => {
  if (text === null) return null
  const line = text.split("\n")[0]!
  return line.length > max ? `${line.slice(0, max - 1)}…` : line
}

/** `/jobs`: filtered by status, type and queue, newest first, `PAGE_SIZE` at a time by keyset. */
export const jobs = (ctx: PageContext, q: JobsQuery) =>
  Effect.gen(function*() {
    const insights = yield* JobInsights
    const now = yield* Clock.currentTimeMillis
    // Only the page's own query: counting the table for a queue list would cost more than the page.
    const rows = yield* insights.page({ ...q, limit: PAGE_SIZE + 1 })
    const shown = rows.slice(0, PAGE_SIZE)
    const last = shown[shown.length - 1]
    const next = rows.length > PAGE_SIZE && last !== undefined ? { createdAt: last.createdAt, id: last.id } : undefined
    const option = (value: string, selected: boolean, label = value) =>
      html`<option value="${value}"${selected ? html` selected` : ""}>${label}</option>`
    const filters = html`<form class="filters" method="get" action="${ctx.base}/jobs">
<label>status <select name="status">${option("", q.status === undefined, "any")}${
      JOB_STATUSES.map((s) => option(s, q.status === s))
    }</select></label>
<label>queue <input name="queue" value="${q.queue ?? ""}" placeholder="any"></label>
<label>type <input name="type" value="${q.name ?? ""}" placeholder="any"></label>
<button type="submit">Filter</button></form>`
    const body = table(
      ["id", "type", "queue", "status", "attempts", "run at", "created", "last error"],
      shown.map((r) => [
        jobLink(ctx, r.id),
        r.name,
        r.queue,
        statusBadge(r.status),
        r.attempts,
        when(r.runAt, now),
        when(r.createdAt, now),
        html`<span class="error">${firstLine(r.lastError)}</span>`
      ]),
      q.after === undefined ? "No jobs match." : "No more jobs."
    )
    const pager = html`<nav class="pager">${
      q.after === undefined ? "" : html`<a href="${jobsHref(ctx, { ...q, after: undefined })}">« Newest</a>`
    }${next === undefined ? "" : html`<a rel="next" href="${jobsHref(ctx, { ...q, after: next })}">Older »</a>`}</nav>`
    return { title: "Jobs", body: html`<h1>Jobs</h1>${filters}${body}${pager}` } satisfies Page
  })

// ---------------------------------------------------------------------------------------------
// Job

/** A payload as indented JSON when it parses, else as stored. */
const pretty = (payload: string): string => {
  try {
    return JSON.stringify(JSON.parse(payload), null, 2)
  } catch {
    return payload
  }
}

const leaseTable = (ctx: PageContext, rows: ReadonlyArray<LeaseRow>, now: number, empty: string) =>
  table(
    ["name", "owner", "host", "acquired", "expires", ""],
    rows.map((l) => [
      html`<span class="mono">${l.name}</span>`,
      html`<span class="mono">${l.owner}</span>`,
      l.host,
      when(l.acquiredAt, now),
      isExpired(l.expiresAt, now)
        ? html`<span class="expired">expired ${duration(now - l.expiresAt)} ago</span>`
        : html`in ${duration(l.expiresAt - now)}`,
      isExpired(l.expiresAt, now)
        ? actionButton(
          ctx,
          `/leases/${encodeURIComponent(l.name)}/clear`,
          "Clear",
          { confirm: `Clear the expired lease ${l.name}?` }
        )
        : ""
    ]),
    empty
  )

const outcomeBadge: Record<AttemptOutcome, string> = {
  completed: "completed",
  failed: "failed",
  dead: "failed",
  interrupted: "interrupted",
  cancelled: "cancelled"
}

/** The job's last attempts (its history column, src/core/history.ts), newest first. */
const history = (r: JobRow, now: number): Html =>
  html`${
    r.history.length < MAX_HISTORY || r.history[0]?.attempt === 1 ?
      "" :
      html`<p class="note">The last ${MAX_HISTORY} attempts; older ones are not kept.</p>`
  }${
    table(
      ["attempt", "started", "ended", "took", "outcome", "host", "error"],
      [...r.history].reverse().map((a) => [
        a.attempt,
        when(a.startedAt, now),
        when(a.endedAt, now),
        duration(a.endedAt - a.startedAt),
        html`<span class="status status-${outcomeBadge[a.outcome]}">${a.outcome}</span>`,
        a.host,
        a.error === null ? html`<span class="none">–</span>` : html`<span class="error lines">${a.error}</span>`
      ]),
      r.status === "processing" ? "Its first attempt is running." : "No attempt has ended yet."
    )
  }`

const readLeases = Effect.flatMap(
  JobLeases,
  (leases) =>
    Effect.flatMap(leases.tableExists, (exists) => (exists ? leases.list : Effect.succeed<ReadonlyArray<LeaseRow>>([])))
)

/**
 * `/jobs/:id`: every column, the payload pretty-printed, its attempt history, the last error,
 * and the lease its attempt holds.
 */
export const job = (ctx: PageContext, id: string) =>
  Effect.gen(function*() {
    const store = yield* JobStore
    const now = yield* Clock.currentTimeMillis
    const found = yield* store.get(id)
    if (Option.isNone(found)) return yield* Effect.fail(new PageError(404, `no job with id ${JSON.stringify(id)}`))
    const r: JobRow = found.value
    const leases = yield* readLeases
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
      ["claimed by", r.claimedBy],
      ["claim token", r.claimToken === null ? null : html`<span class="mono">${r.claimToken}</span>`],
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
<div class="actions">${actions}</div>
<dl class="fields">${
        fields.map(([k, v]) => html`<div><dt>${k}</dt><dd>${v ?? html`<span class="none">–</span>`}</dd></div>`)
      }</dl>
<h2>Payload</h2><pre class="payload">${pretty(r.payload)}</pre>
<h2>Attempts</h2><section id="attempts">${history(r, now)}</section>
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

// ---------------------------------------------------------------------------------------------
// Leases

/** The recently lost leases and their runs; a database not migrated to 10 yet has no record to show. */
const lostTable = (ctx: PageContext, now: number) =>
  Effect.map(
    Effect.either(Effect.flatMap(JobStore, (store) => store.lostLeases(RECENT_LOST_LEASES))),
    (read) =>
      read._tag === "Left"
        ? html`<p class="empty">Not recorded on this database yet: run <code>leasehold migrate</code> (migration 10).</p>`
        : table(
          ["lost", "lease", "job", "type", "attempt", "host", "fencing token", "taken by", "detected when the run"],
          read.right.map((l) => [
            when(l.lostAt, now),
            html`<span class="mono">${l.leaseName}</span>`,
            jobLink(ctx, l.jobId),
            l.jobName,
            l.attempt,
            l.host,
            l.fencingToken === null ? null : String(l.fencingToken),
            l.holder === null ? html`<span class="none">nobody</span>` : html`<span class="mono">${l.holder}</span>`,
            l.detected
          ]),
          "No lease lost recently."
        )
  )

/**
 * `/leases`: every lease of exclusive jobs and concurrency keys, who holds it and for how long;
 * then the leases runs lost recently, and which runs.
 */
export const leases = (ctx: PageContext) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const rows = yield* readLeases
    const lost = yield* lostTable(ctx, now)
    return {
      title: "Leases",
      refresh: REFRESH_MS,
      body: html`<h1>Leases</h1>
<p class="note">Held by running jobs of exclusive types and concurrency keys; the owner is the attempt's claim token. An expired lease is free for the next job to take.</p>
${leaseTable(ctx, rows, now, "No leases held.")}
<h2>Recently lost</h2>
<p class="note">A run whose lease expired and was taken by another before it ended may have overlapped that run. The last ${RECENT_LOST_LEASES} are shown; retention keeps 7 days (and at most ${MAX_LOST_LEASES}).</p>
<section id="lost">${lost}</section>`
    } satisfies Page
  })

// ---------------------------------------------------------------------------------------------
// Hosts

/** The processing jobs per host (`claimed_by`). */
const runningPerHost = Effect.map(
  Effect.flatMap(JobStore, (store) => store.list({ status: "processing", limit: 10_000 })),
  (rows) => {
    const running = new Map<string, number>()
    for (const r of rows) running.set(r.claimedBy ?? "?", (running.get(r.claimedBy ?? "?") ?? 0) + 1)
    return running
  }
)

/** `/hosts`: each worker host's cap, running jobs, drain, last sign of life, and whether it is gone. */
export const hosts = (ctx: PageContext) =>
  Effect.gen(function*() {
    const store = yield* JobStore
    const now = yield* Clock.currentTimeMillis
    const [rows, running] = yield* Effect.all([store.listHosts, runningPerHost])
    const body = table(
      ["host", "cap", "running", "draining", "last seen", "started", "version", ""],
      rows.map((h) => {
        const draining = isDraining(h, now)
        const path = `/hosts/${encodeURIComponent(h.host)}`
        return [
          html`<span class="mono">${h.host}</span>${isGone(h, now) ? html` <span class="gone">gone</span>` : ""}`,
          h.maxConcurrent > 0 ? h.maxConcurrent : "–",
          running.get(h.host) ?? 0,
          draining ? (h.drainExpiresAt === null ? "yes" : html`until ${when(h.drainExpiresAt, now)}`) : "no",
          when(h.lastSeenAt, now),
          when(h.startedAt, now),
          h.codeVersion,
          draining ? actionButton(ctx, `${path}/resume`, "Resume") : actionButton(ctx, `${path}/drain`, "Drain")
        ]
      }),
      "No worker has run yet."
    )
    return {
      title: "Hosts",
      refresh: REFRESH_MS,
      body: html`<h1>Hosts</h1>
<p class="note">A host is gone when it has not been seen for 5 minutes (a running worker refreshes its row every reap, 15 s by default).</p>
${body}`
    } satisfies Page
  })

// ---------------------------------------------------------------------------------------------
// Schedules

/** `/schedules`: each recurring job type's cron, time zone, catch-up policy, last slot handled and next slot. */
export const schedules = (ctx: PageContext) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const rows = yield* (yield* ScheduleStore).list
    const body = table(
      ["job type", "cron", "time zone", "catch-up", "last slot", "next slot"],
      rows.map((r) => [
        html`<a href="${ctx.base}/jobs?type=${encodeURIComponent(r.name)}">${r.name}</a>`,
        html`<span class="mono">${r.cron}</span>`,
        r.timeZone,
        r.catchUp,
        when(r.lastSlot, now),
        r.nextSlot !== null && r.nextSlot <= now
          ? html`${when(r.nextSlot, now)} <span class="expired">due</span>`
          : when(r.nextSlot, now)
      ]),
      "No schedules: a job type gets one with Job.define({ …, schedule: { cron } }), registered when a worker starts."
    )
    return {
      title: "Schedules",
      refresh: REFRESH_MS,
      body: html`<h1>Schedules</h1>
<p class="note">Every running worker enqueues a scheduled job type at each slot, one job per slot however many workers run. A next slot that is due means no worker has run since it came.</p>
${body}`
    } satisfies Page
  })
