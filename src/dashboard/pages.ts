/**
 * The dashboard's pages: each reads what it shows through the ports and renders it with `html`
 * (./html.ts), which escapes every value. Pages return the content of `<main>`; ./app.ts puts it
 * in the layout (or sends it alone for a live refresh). A job's own page is ./jobPage.ts; what
 * pages share is ./parts.ts.
 */
import { Clock, Effect, Option } from "effect"
import { MINUTE_MS, minuteOf } from "../core/browse.ts"
import { MAX_LOST_LEASES, RECENT_LOST_LEASES } from "../core/lostLeases.ts"
import { isDraining, isGone } from "../core/hosts.ts"
import { JOB_STATUSES, type JobStatus } from "../core/jobs.ts"
import { isExpired } from "../core/lease.ts"
import { type ActivityMinute, JobInsights, type JobCursor } from "../ports/JobInsights.ts"
import { JobLeases, JobStore } from "../ports/JobStore.ts"
import { ScheduleStore } from "../ports/ScheduleStore.ts"
import { duration, iso } from "./format.ts"
import { type Html, html, type Part } from "./html.ts"
import {
  actionButton,
  jobLink,
  leaseTable,
  type Page,
  type PageContext,
  PageError,
  readLeases,
  REFRESH_MS,
  statusBadge,
  table,
  when
} from "./parts.ts"

/** Jobs per page of the jobs list. */
export const PAGE_SIZE = 50

const ACTIVITY_MINUTES = 60

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
      leases.list
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
