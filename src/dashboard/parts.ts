/**
 * What the dashboard's pages share: a page and where it is served, the error a page answers with,
 * and the pieces several pages render (times, badges, tables, action buttons, job links, the
 * lease table). Every value goes through `html` (./html.ts), which escapes it.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"
import { isExpired, type LeaseRow } from "../core/lease.ts"
import { JobLeases } from "../ports/JobStore.ts"
import { duration, iso, relative } from "./format.ts"
import { type Html, html, type Part } from "./html.ts"

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

/** The live refresh of the pages that change by themselves, in ms. */
export const REFRESH_MS = 5000

/** A time, relative to now, with the exact time in its tooltip. */
export const when = (at: number | null, now: number): Html =>
  at === null ?
    html`<span class="none">–</span>` :
    html`<time datetime="${iso(at)}" title="${iso(at)}">${relative(at, now)}</time>`

/** A job's status as a coloured badge. */
export const statusBadge = (status: string): Html => html`<span class="status status-${status}">${status}</span>`

/** A table of `rows` under `head`, or the line `empty` when there are none. */
export const table = (head: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<Part>>, empty: string): Html =>
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
export const actionButton = (
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

/** A link to a job's page, its id as the text. */
export const jobLink = (ctx: PageContext, id: string): Html =>
  html`<a class="mono" href="${ctx.base}/jobs/${encodeURIComponent(id)}">${id}</a>`

/** The lease table of the leases page and a job's page; an expired lease gets a Clear button. */
export const leaseTable = (ctx: PageContext, rows: ReadonlyArray<LeaseRow>, now: number, empty: string) =>
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

/** Every lease of exclusive jobs and concurrency keys; with no lease table, the missing-table error (./unmigrated.ts). */
export const readLeases: Effect.Effect<ReadonlyArray<LeaseRow>, SqlError, JobLeases> = Effect.flatMap(
  JobLeases,
  (leases) => leases.list
)
