/**
 * The dashboard as one function from a request to a response, over the ports (JobStore,
 * JobLeases, ScheduleStore, JobInsights): routes, the layout, the assets, and the token rule for actions. The
 * node:http glue is ./node.ts. `/metrics` is the Prometheus scrape. Every page is read-only; an action is a POST that carries the
 * configured token in the `X-Leasehold-Token` header (a header, not a cookie or a form field,
 * so another site cannot make a browser send it), and without a configured token there are none.
 */
import { createHash, timingSafeEqual } from "node:crypto"
import { Cause, Effect } from "effect"
import type { SqlError } from "@effect/sql/SqlError"
import type { JobInsights } from "../ports/JobInsights.ts"
import type { LeaseError } from "../ports/LeaseLock.ts"
import * as Metrics from "../runtime/metrics.ts"
import { type JobLeases, JobStore } from "../ports/JobStore.ts"
import type { ScheduleStore } from "../ports/ScheduleStore.ts"
import {
  ActionError,
  cancelJob,
  clearLease,
  clearLimit,
  discardJob,
  drainHost,
  pauseLimit,
  resumeHost,
  resumeLimit,
  retryJob
} from "./actions.ts"
import { CSS, FRAGMENT_HEADER, JS, TOKEN_HEADER } from "./assets.ts"
import { html } from "./html.ts"
import { job } from "./jobPage.ts"
import { limits } from "./limitsPage.ts"
import * as Pages from "./pages.ts"
import { gapState, migrateHow, type SchemaGap, schemaGap, schemaGapMessage } from "./unmigrated.ts"
import { type Page, type PageContext, PageError } from "./parts.ts"

/** What the dashboard reads and writes through. */
export type DashboardServices = JobStore | JobLeases | ScheduleStore | JobInsights

/** A request as the dashboard sees it. */
export interface DashboardRequest {
  readonly method: string
  /** The path and query string below the mount point (`/jobs?status=failed`). */
  readonly url: string
  /** A request header by its lower-case name. */
  readonly header: (name: string) => string | undefined
}

/** A response to send as it is. */
export interface DashboardResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/** How a dashboard is served. */
export interface AppOptions {
  /** The path the dashboard is mounted at, without a trailing slash ("" at the root). */
  readonly base: string
  /** The action token; undefined or empty: read-only. */
  readonly token?: string | undefined
}

/** Same-origin only: no inline script or style, nothing from elsewhere, no framing. */
const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer"
}

const respond = (
  status: number,
  type: string,
  body: string,
  extra: Record<string, string> = {}
): DashboardResponse => ({
  status,
  headers: { "content-type": type, "cache-control": "no-store", ...SECURITY_HEADERS, ...extra },
  body
})

const json = (status: number, body: unknown) => respond(status, "application/json; charset=utf-8", JSON.stringify(body))

const NAV: ReadonlyArray<readonly [string, string]> = [
  ["/", "Overview"],
  ["/jobs", "Jobs"],
  ["/leases", "Leases"],
  ["/hosts", "Hosts"],
  ["/limits", "Limits"],
  ["/schedules", "Schedules"]
]

/** The whole document around a page's `<main>`. */
const layout = (ctx: PageContext, path: string, page: Page): string =>
  html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${page.title} · leasehold</title>
<link rel="stylesheet" href="${ctx.base}/assets/dashboard.css"><script src="${ctx.base}/assets/dashboard.js" defer></script></head>
<body><header><a class="brand" href="${ctx.base}/">leasehold</a><nav>${
    NAV.map(([href, label]) => {
      const current = href === "/" ? path === "/" : path === href || path.startsWith(`${href}/`)
      return html`<a href="${ctx.base}${href}"${current ? html` aria-current="page"` : ""}>${label}</a>`
    })
  }</nav>${
    ctx.actions
      ? html`<form id="token-form"><input type="password" name="token" placeholder="action token" autocomplete="off" aria-label="action token"><button type="submit">Use token</button></form>`
      : html`<span class="mode">read-only (set LEASEHOLD_DASHBOARD_TOKEN to enable actions)</span>`
  }</header>
<p id="flash" role="status"></p>
<main id="main"${
    page.refresh === undefined ? "" : html` data-refresh="${page.refresh}"`
  }>${page.body}</main></body></html>`.text

const errorPage = (status: number, message: string): Page => ({
  title: status === 404 ? "Not found" : status === 400 ? "Bad request" : "Error",
  body: html`<h1>${
    status === 404 ? "Not found" : status === 400 ? "Bad request" : "Error"
  }</h1><p class="error">${message}</p>`
})

/**
 * The page every path answers with while leasehold's tables are missing (or older than the code):
 * what is wrong in the driver's words, and how to run the migrations.
 */
const unmigratedPage = (gap: SchemaGap, prefix: string): Page => {
  const how = migrateHow(prefix)
  const title = gap.missing === "table" ? "Tables missing" : "Tables out of date"
  return {
    title,
    body: html`<h1>${title}</h1><p class="error">leasehold's tables (prefix ${prefix}) ${
      gapState(gap)
    }: ${gap.detail}.</p>
<p>Run the migrations, then reload this page: <code>${how.command}</code> on the command line (with this database in
<code>--database-url</code> or <code>LEASEHOLD_DATABASE_URL</code>), or <code>${how.code}</code> from code. A worker started
with <code>leasehold worker</code> runs them as it starts.</p>`
  }
}

/**
 * A route's failure that shows leasehold's tables missing, answered by `render` with the gap and
 * the table prefix; any other failure goes on as it was.
 */
const whenUnmigrated = <A>(render: (gap: SchemaGap, prefix: string) => A) => (cause: Cause.Cause<unknown>) => {
  const gap = schemaGap(Cause.squash(cause))
  return gap === undefined
    ? Effect.failCause(cause)
    : Effect.map(JobStore, (store) => render(gap, store.tables.prefix))
}

/** Whether `given` is the token, compared in constant time (over digests, so lengths do not leak). */
const tokenMatches = (token: string, given: string | undefined): boolean =>
  given !== undefined &&
  timingSafeEqual(createHash("sha256").update(token).digest(), createHash("sha256").update(given).digest())

const segment = (s: string) => {
  try {
    return decodeURIComponent(s)
  } catch {
    return undefined
  }
}

/** A page or an action: its own error, or the database's (shown as a 500), or bad lease input. */
type Route<A, E> = Effect.Effect<A, E | SqlError | LeaseError, DashboardServices>

/** Which page a GET path shows. */
const pageFor = (ctx: PageContext, path: string, params: URLSearchParams): Route<Page, PageError> | undefined => {
  if (path === "/") return Pages.overview(ctx)
  if (path === "/jobs") return Effect.flatMap(Pages.parseJobsQuery(params), (q) => Pages.jobs(ctx, q))
  if (path === "/leases") return Pages.leases(ctx)
  if (path === "/hosts") return Pages.hosts(ctx)
  if (path === "/limits") return limits(ctx)
  if (path === "/schedules") return Pages.schedules(ctx)
  const one = /^\/jobs\/([^/]+)$/.exec(path)
  const id = one === null ? undefined : segment(one[1]!)
  return id === undefined ? undefined : job(ctx, id)
}

/** Which action a POST path asks for. */
const actionFor = (path: string): Route<string, ActionError> | undefined => {
  const m = /^\/(jobs|hosts|leases|limits)\/([^/]+)\/(retry|cancel|discard|drain|resume|clear|pause)$/.exec(path)
  const target = m === null ? undefined : segment(m[2]!)
  if (m === null || target === undefined) return undefined
  switch (`${m[1]}/${m[3]}`) {
    case "jobs/retry":
      return retryJob(target)
    case "jobs/cancel":
      return cancelJob(target)
    case "jobs/discard":
      return discardJob(target)
    case "hosts/drain":
      return drainHost(target)
    case "hosts/resume":
      return resumeHost(target)
    case "leases/clear":
      return clearLease(target)
    case "limits/pause":
      return pauseLimit(target)
    case "limits/resume":
      return resumeLimit(target)
    case "limits/clear":
      return clearLimit(target)
    default:
      return undefined
  }
}

/** A failure nobody planned for (the database is down, say): logged, and shown as one line. */
const unexpected = <A>(render: (message: string) => A) => (cause: Cause.Cause<unknown>) =>
  Effect.as(
    Effect.logError("dashboard request failed", cause),
    render(Cause.squash(cause) instanceof Error ? (Cause.squash(cause) as Error).message : Cause.pretty(cause))
  )

/** Answers one request. Never fails: errors become error pages (or JSON for actions). */
export const handle = (options: AppOptions) => {
  const token = options.token === undefined || options.token === "" ? undefined : options.token
  const ctx: PageContext = { base: options.base, actions: token !== undefined }
  return (request: DashboardRequest): Effect.Effect<DashboardResponse, never, DashboardServices> => {
    const url = new URL(request.url, "http://dashboard.invalid")
    const path = url.pathname.length > 1 ? url.pathname.replace(/\/+$/, "") : url.pathname
    if (request.method === "GET" || request.method === "HEAD") {
      if (path === "/assets/dashboard.css") return Effect.succeed(respond(200, "text/css; charset=utf-8", CSS))
      if (path === "/assets/dashboard.js") return Effect.succeed(respond(200, "text/javascript; charset=utf-8", JS))
      // The Prometheus scrape (src/runtime/metrics.ts): the store's gauges, and this process's counters.
      if (path === "/metrics") {
        return Effect.map(Metrics.render, (text) => respond(200, Metrics.PROMETHEUS_CONTENT_TYPE, text))
      }
      const fragment = request.header(FRAGMENT_HEADER) === "main"
      const render = (status: number, page: Page) =>
        respond(status, "text/html; charset=utf-8", fragment ? page.body.text : layout(ctx, path, page))
      const page = pageFor(ctx, path, url.searchParams) ?? Effect.fail(new PageError(404, `no page at ${path}`))
      return page.pipe(
        Effect.map((p) => render(200, p)),
        Effect.catchIf(
          (e): e is PageError => e instanceof PageError,
          (e) => Effect.succeed(render(e.status, errorPage(e.status, e.message)))
        ),
        Effect.catchAllCause(whenUnmigrated((gap, prefix) => render(503, unmigratedPage(gap, prefix)))),
        Effect.catchAllCause(unexpected((message) => render(500, errorPage(500, message))))
      )
    }
    if (request.method !== "POST") {
      return Effect.succeed({
        ...json(405, { error: `${request.method} is not allowed` }),
        headers: { allow: "GET, POST" }
      })
    }
    const action = actionFor(path)
    if (action === undefined) return Effect.succeed(json(404, { error: `no action at ${path}` }))
    if (token === undefined) {
      return Effect.succeed(
        json(403, { error: "actions are disabled: the dashboard has no LEASEHOLD_DASHBOARD_TOKEN" })
      )
    }
    if (!tokenMatches(token, request.header(TOKEN_HEADER))) {
      return Effect.succeed(json(401, { error: `a valid token is needed in the ${TOKEN_HEADER} header` }))
    }
    return action.pipe(
      Effect.map((message) => json(200, { message })),
      Effect.catchIf(
        (e): e is ActionError => e instanceof ActionError,
        (e) => Effect.succeed(json(e.status, { error: e.message }))
      ),
      Effect.catchTag("LeaseInputError", (e) => Effect.succeed(json(400, { error: e.message }))),
      Effect.catchAllCause(whenUnmigrated((gap, prefix) => json(503, { error: schemaGapMessage(gap, prefix) }))),
      Effect.catchAllCause(unexpected((message) => json(500, { error: message })))
    )
  }
}
