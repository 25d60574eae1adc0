/**
 * The dashboard without a browser (the browser test is test/e2e/dashboard-browser.test.ts): the
 * escaping tag, the token rule for actions, bad input, a job's running attempt, the 503 page on
 * tables never migrated (each database), mounting under a path (Express's `req.baseUrl`), and
 * `leasehold dashboard` serving until it is interrupted.
 */
import { Effect, Layer, ManagedRuntime } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { memoryDatabaseLayer } from "../../src/adapters/memory/database.ts"
import { memoryJobInsightsLayer } from "../../src/adapters/memory/JobInsights.ts"
import { memoryJobStoreLayer } from "../../src/adapters/memory/JobStore.ts"
import { clientLayerForUrl } from "../../src/adapters/clients.ts"
import { runInProcess } from "../../src/cli/main.ts"
import { type DashboardRequest, handle, nodeHandler, servicesLayer } from "../../src/dashboard.ts"
import { escapeHtml, html } from "../../src/dashboard/html.ts"
import { JobStore } from "../../src/JobStore.ts"
import * as Limits from "../../src/runtime/limits.ts"
import * as Migrator from "../../src/runtime/migrate.ts"
import { MemoryDatabase } from "../../src/adapters/memory/database.ts"
import { DEAD_ID, fixedClock, NOW, seed, XSS, XSS_ID } from "../support/dashboard.ts"
import { MYSQL_URL, PG_URL, uniquePrefix } from "../support/urls.ts"
import { Clock } from "effect"

const services = Layer.mergeAll(memoryJobStoreLayer(), memoryJobInsightsLayer()).pipe(
  Layer.provideMerge(memoryDatabaseLayer)
)
const runtime = ManagedRuntime.make(Layer.merge(services, Layer.setClock(fixedClock(Clock.make()))))

beforeAll(async () => {
  await runtime.runPromise(Effect.flatMap(MemoryDatabase, (db) => Migrator.makeMemory(db).run))
  await runtime.runPromise(seed)
})
afterAll(() => runtime.dispose())

const request = (method: string, url: string, headers: Record<string, string> = {}): DashboardRequest => ({
  method,
  url,
  header: (name) => headers[name]
})
const serve = (req: DashboardRequest, token?: string) => runtime.runPromise(handle({ base: "", token })(req))
/** A field of a job's page, as text. */
const field = (body: string, name: string) =>
  new RegExp(`<dt>${name}</dt><dd>(.*?)</dd>`).exec(body)?.[1]?.replace(/<[^>]+>/g, "")

describe("html", () => {
  it("escapes every interpolated value, in text and in attributes, and keeps its own markup", () => {
    expect(escapeHtml(`<a href="x" onclick='y'>&</a>`)).toBe(
      "&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;"
    )
    const inner = html`<b>${XSS.payload}</b>`
    expect(html`<p title="${XSS.key}">${inner}${[XSS.lease, 1]}${null}${false}</p>`.text).toBe(
      `<p title="&quot;&gt;&lt;script&gt;alert(&quot;key&quot;)&lt;/script&gt;"><b>&lt;script&gt;alert(&quot;payload&quot;)&lt;/script&gt;</b>&lt;script&gt;alert(&quot;lease&quot;)&lt;/script&gt;1</p>`
    )
  })
})

describe("the handler", () => {
  it("renders every page with hostile data as text only, under a strict content security policy", async () => {
    for (
      const path of [
        "/",
        "/jobs",
        "/jobs?status=failed",
        `/jobs/${encodeURIComponent(DEAD_ID)}`,
        "/leases",
        "/hosts",
        "/schedules"
      ]
    ) {
      const res = await serve(request("GET", path), "t")
      expect(res.status, path).toBe(200)
      expect(res.headers["content-security-policy"]).toContain("script-src 'self'")
      // Our own script tag, and nothing else that is one.
      expect(res.body.match(/<script/g), path).toHaveLength(1)
      expect(res.body).not.toContain("<img")
    }
    const jobs = await serve(request("GET", "/jobs"))
    expect(jobs.body).toContain(escapeHtml(XSS.type))
    expect(jobs.body).toContain(escapeHtml(XSS.queue))
  })

  it("shows a job's attempt history, newest first, with hostile errors as text", async () => {
    const rows = (body: string) =>
      [...body.split("<h2>Attempts</h2>")[1]!.split("<h2>")[0]!.matchAll(/<tr><td>(.*?)<\/td><\/tr>/gs)].map((m) =>
        m[1]!.split("</td><td>").map((cell) => cell.replace(/<[^>]+>/g, ""))
      )
    const dead = rows((await serve(request("GET", `/jobs/${DEAD_ID}`))).body)
    expect(dead.map(([attempt, started, ended, took, outcome, host]) => [attempt, started, ended, took, outcome, host]))
      .toEqual([
        ["3", "90s ago", "85s ago", "5s", "dead", "worker-b"],
        ["2", "4m ago", "4m ago", "3s", "failed", "worker-b"],
        ["1", "5m ago", "5m ago", "2s", "failed", "worker-a"]
      ])
    expect(dead[0]![6]).toContain("HttpError: 503 Service Unavailable")
    expect(dead[2]![6]).toBe("HttpError: 502 Bad Gateway from https://api.example.com/accounts/1061")
    const hostile = rows((await serve(request("GET", `/jobs/${XSS_ID}`))).body)
    expect(hostile).toHaveLength(1)
    expect(hostile[0]![6]).toBe(escapeHtml(XSS.error))
    const pending = (await serve(request("GET", "/jobs/00000000-0000-4000-8000-000000000071"))).body
    expect(pending).toContain("No attempt has ended yet.")
    // A processing job: its running attempt (number, claimed when, by which host), beside its claim.
    const running = (await serve(request("GET", "/jobs/00000000-0000-4000-8000-000000000063"))).body
    expect(rows(running)).toEqual([["1", "12s ago", "–", "running for 12s", "running", "worker-b", "–"]])
    expect(field(running, "claimed by")).toBe("worker-b")
    expect(field(running, "claim token")).toBe("token-000000000063")
  })

  it("says at the top of a job's page why it is where it is, in Job.explain's words, hostile text escaped", async () => {
    const why = async (jobId: string) => {
      const body = (await serve(request("GET", `/jobs/${encodeURIComponent(jobId)}`))).body
      return /<p class="why" id="why"><strong>Why:<\/strong> (.*?)<\/p>/s.exec(body)?.[1]
    }
    const iso = (ms: number) => new Date(ms).toISOString()
    // its third attempt ended 85.3 s before NOW (test/support/dashboard.ts)
    expect(await why(DEAD_ID)).toBe(
      `dead since ${iso(NOW - 85_300)} (1m 25s ago), after 3 attempts: ` +
        "HttpError: 503 Service Unavailable from https://api.example.com/accounts/1061"
    )
    expect(await why("00000000-0000-4000-8000-000000000063")).toBe(
      `running: claimed by host worker-b at ${iso(NOW - 12_000)} (12s ago), attempt 1, holding no lease`
    )
    // hosts up beside a draining one and a gone one: due, waiting for a worker
    expect(await why("00000000-0000-4000-8000-000000000064")).toBe(
      `due since ${iso(NOW - 270_000)} (4m 30s ago); waiting for a worker of queue emails`
    )
    expect(await why("00000000-0000-4000-8000-000000000071")).toBe(`not due until ${iso(NOW + 45_000)} (in 45s)`)
    // seeded to end 1.8 s after the dashboard's NOW
    expect(await why(XSS_ID)).toBe(
      `dead since ${iso(NOW + 1800)} (in 2s), after 1 attempt: ${escapeHtml(XSS.error)}`
    )
  })

  it("lists the schedules by name: cron, time zone, catch-up, last and next slot, a missed one due", async () => {
    const res = await serve(request("GET", "/schedules"))
    expect(res.status).toBe(200)
    expect(res.body).toContain(`<a href="/schedules" aria-current="page">Schedules</a>`)
    const rows = [...res.body.matchAll(/<tr><td>(.*?)<\/td><\/tr>/gs)].map((m) =>
      m[1]!.split("</td><td>").map((cell) => cell.replace(/<[^>]+>/g, ""))
    )
    expect(rows).toEqual([
      [escapeHtml(XSS.type), "0 * * * *", "UTC", "once", "–", "in 59m"],
      ["NightlyReport", "0 3 * * *", "Europe/Berlin", "once", "14h ago", "in 10h"],
      ["SyncAccount", "*/15 * * * *", "UTC", "skip", "31m ago", "16m ago due"]
    ])
    expect(res.body).toContain(`href="/jobs?type=${encodeURIComponent(XSS.type)}"`)
  })

  it("lists the recently lost leases, newest first, with their runs, as text", async () => {
    const res = await serve(request("GET", "/leases"))
    const lost = res.body.split(`<section id="lost">`)[1]!.split("</section>")[0]!
    const rows = [...lost.matchAll(/<tr><td>(.*?)<\/td><\/tr>/gs)].map((m) =>
      m[1]!.split("</td><td>").map((cell) => cell.replace(/<[^>]+>/g, ""))
    )
    expect(rows).toEqual([
      [
        "3m ago",
        escapeHtml(XSS.lease),
        XSS_ID,
        escapeHtml(XSS.type),
        "1",
        escapeHtml(XSS.host),
        "3",
        "nobody",
        "timed out"
      ],
      [
        "25m ago",
        "key:acct-1042",
        "00000000-0000-4000-8000-000000000042",
        "SendReceipt",
        "1",
        "worker-a",
        "17",
        "token-000000000043",
        "ended"
      ]
    ])
    expect(lost).toContain(`href="/jobs/${XSS_ID}"`)
    expect(res.body.match(/<script/g)).toHaveLength(1)
  })

  it("says so when there are no schedules or lost leases", async () => {
    const empty = ManagedRuntime.make(Layer.merge(services, Layer.setClock(fixedClock(Clock.make()))))
    try {
      await empty.runPromise(Effect.flatMap(MemoryDatabase, (db) => Migrator.makeMemory(db).run))
      const res = await empty.runPromise(handle({ base: "" })(request("GET", "/schedules")))
      expect(res.status).toBe(200)
      expect(res.body).toContain(`<p class="empty">No schedules: a job type gets one with Job.define`)
      const leases = await empty.runPromise(handle({ base: "" })(request("GET", "/leases")))
      expect(leases.body).toContain(`<p class="empty">No lease lost recently.</p>`)
    } finally {
      await empty.dispose()
    }
  })

  it("serves the Prometheus scrape at /metrics, with the store's gauges", async () => {
    const res = await serve(request("GET", "/metrics"))
    expect(res.status).toBe(200)
    expect(res.headers["content-type"]).toContain("text/plain")
    expect(res.body).toContain("leasehold_store_up 1")
    expect(res.body).toMatch(/leasehold_jobs\{queue="emails",status="completed"\} 20/)
  })

  it("answers a live refresh with the <main> content alone", async () => {
    const res = await serve(request("GET", "/", { "x-leasehold-fragment": "main" }))
    expect(res.body.startsWith("<h1>Overview</h1>")).toBe(true)
    expect(res.body).not.toContain("<html")
  })

  it("refuses a bad filter or cursor with a 400 page, and an unknown path or job with a 404", async () => {
    const bad = await serve(request("GET", "/jobs?status=<b>dead</b>"))
    expect(bad.status).toBe(400)
    expect(bad.body).toContain(
      "status: expected one of pending, processing, completed, failed, interrupted, cancelled, got &quot;&lt;b&gt;dead&lt;/b&gt;&quot;"
    )
    expect((await serve(request("GET", "/jobs?after=yesterday"))).status).toBe(400)
    expect((await serve(request("GET", "/nowhere"))).status).toBe(404)
    expect((await serve(request("GET", "/jobs/no-such-job"))).status).toBe(404)
  })

  it("takes actions only by POST with the configured token; read-only without one", async () => {
    const retry = `/jobs/${DEAD_ID}/retry`
    const status = () =>
      runtime.runPromise(
        Effect.flatMap(JobStore, (s) => Effect.map(s.get(DEAD_ID), (r) => r._tag === "Some" ? r.value.status : "none"))
      )
    // Read-only: no buttons, no token field, and every action is refused.
    const page = await serve(request("GET", retry.replace("/retry", "")))
    expect(page.body).not.toContain("data-action")
    expect(page.body).toContain("read-only")
    expect(await serve(request("POST", retry, { "x-leasehold-token": "anything" }))).toMatchObject({ status: 403 })
    // With a token: a wrong or missing one is refused; GET never acts.
    expect((await serve(request("GET", retry), "t")).status).toBe(404)
    expect((await serve(request("POST", retry), "t")).status).toBe(401)
    expect((await serve(request("POST", retry, { "x-leasehold-token": "wrong" }), "t")).status).toBe(401)
    expect((await serve(request("PUT", retry, { "x-leasehold-token": "t" }), "t")).status).toBe(405)
    expect(await status()).toBe("failed")
    const ok = await serve(request("POST", retry, { "x-leasehold-token": "t" }), "t")
    expect(ok.status).toBe(200)
    expect(JSON.parse(ok.body)).toEqual({ message: `job ${DEAD_ID} is pending again` })
    expect(await status()).toBe("pending")
    // Pending again, its row still names its last attempt's host: not shown as a claim.
    expect(await runtime.runPromise(Effect.flatMap(JobStore, (s) => s.get(DEAD_ID)))).toMatchObject({
      value: { claimedBy: "worker-b" }
    })
    expect(field((await serve(request("GET", `/jobs/${DEAD_ID}`))).body, "claimed by")).toBe("–")
    // Twice is a conflict: it is no longer dead.
    expect((await serve(request("POST", retry, { "x-leasehold-token": "t" }), "t")).status).toBe(409)
  })

  it("cancels an unfinished job, discards a dead or cancelled one, with the token only; refusals are 404 and 409", async () => {
    const post = (path: string, token = "t") => serve(request("POST", path, { "x-leasehold-token": token }), "t")
    const job = (id: string) => runtime.runPromise(Effect.flatMap(JobStore, (s) => s.get(id)))
    const PENDING = "00000000-0000-4000-8000-000000000070"
    const RUNNING = "00000000-0000-4000-8000-000000000063"
    const DEAD = "00000000-0000-4000-8000-000000000009"
    const COMPLETED = "00000000-0000-4000-8000-000000000001"
    // The buttons the job page offers follow its status, and only with a token.
    const buttons = async (id: string, token?: string) =>
      [...(await serve(request("GET", `/jobs/${id}`), token)).body.matchAll(/data-action="\/jobs\/[^/]+\/(\w+)"/g)]
        .map((m) => m[1])
    expect(await buttons(PENDING, "t")).toEqual(["cancel"])
    expect(await buttons(RUNNING, "t")).toEqual(["cancel"])
    expect(await buttons(DEAD, "t")).toEqual(["retry", "discard"])
    expect(await buttons(COMPLETED, "t")).toEqual([])
    expect(await buttons(PENDING)).toEqual([])
    expect(await buttons(DEAD)).toEqual([])
    // Without a configured token, or with a wrong one, nothing changes.
    expect((await serve(request("POST", `/jobs/${PENDING}/cancel`, { "x-leasehold-token": "t" }))).status).toBe(403)
    expect((await serve(request("POST", `/jobs/${DEAD}/discard`, { "x-leasehold-token": "t" }))).status).toBe(403)
    expect((await post(`/jobs/${PENDING}/cancel`, "wrong")).status).toBe(401)
    expect((await post(`/jobs/${DEAD}/discard`, "wrong")).status).toBe(401)
    expect(await job(PENDING)).toMatchObject({ value: { status: "pending" } })
    expect(await job(DEAD)).toMatchObject({ value: { status: "failed" } })
    // Cancel: pending at once; a running one says its attempt stops later; a finished one is a 409.
    expect(await post(`/jobs/${PENDING}/cancel`)).toMatchObject({
      status: 200,
      body: JSON.stringify({ message: `job ${PENDING} is cancelled` })
    })
    expect(await job(PENDING)).toMatchObject({ value: { status: "cancelled" } })
    // A cancelled job may be retried or discarded, as a dead one.
    expect(await buttons(PENDING, "t")).toEqual(["retry", "discard"])
    expect(JSON.parse((await post(`/jobs/${RUNNING}/cancel`)).body)).toEqual({
      message: `job ${RUNNING} is cancelled; its running attempt stops at its next heartbeat`
    })
    const again = await post(`/jobs/${PENDING}/cancel`)
    expect(again.status).toBe(409)
    expect(JSON.parse(again.body).error).toBe(
      `job ${PENDING} is cancelled: only a pending or processing job can be cancelled`
    )
    expect((await post(`/jobs/${COMPLETED}/cancel`)).status).toBe(409)
    // Discard: only a dead job; the row is gone after.
    expect((await post(`/jobs/${COMPLETED}/discard`)).status).toBe(409)
    expect(await job(COMPLETED)).toMatchObject({ _tag: "Some" })
    expect(await post(`/jobs/${DEAD}/discard`)).toMatchObject({
      status: 200,
      body: JSON.stringify({ message: `discarded job ${DEAD}` })
    })
    expect(await job(DEAD)).toMatchObject({ _tag: "None" })
    expect((await post(`/jobs/${DEAD}/discard`)).status).toBe(404)
    // A cancelled one: retried back to pending, or discarded.
    expect(JSON.parse((await post(`/jobs/${PENDING}/retry`)).body)).toEqual({
      message: `job ${PENDING} is pending again`
    })
    expect(await job(PENDING)).toMatchObject({ value: { status: "pending", attempts: 0 } })
    expect(JSON.parse((await post(`/jobs/${RUNNING}/discard`)).body)).toEqual({ message: `discarded job ${RUNNING}` })
    expect(await job(RUNNING)).toMatchObject({ _tag: "None" })
    // A hostile id is refused as JSON (never HTML), naming the id as data.
    const hostile = encodeURIComponent(XSS.payload)
    for (const action of ["cancel", "discard"]) {
      const res = await post(`/jobs/${hostile}/${action}`)
      expect(res.status).toBe(404)
      expect(res.headers["content-type"]).toContain("application/json")
      expect(JSON.parse(res.body).error).toBe(`no job with id ${XSS.payload}`)
    }
    // The hostile job's discard button: its type, in the confirm question, stays text.
    const page = await serve(request("GET", `/jobs/${XSS_ID}`), "t")
    expect(page.body).toContain(`data-confirm="Delete the dead job ${escapeHtml(XSS.type)} ${XSS_ID}?`)
    expect(page.body.match(/<script/g)).toHaveLength(1)
  })

  it("drains and resumes a host, and clears an expired lease but not a live one", async () => {
    const post = (path: string) => serve(request("POST", path, { "x-leasehold-token": "t" }), "t")
    const host = (name: string) => runtime.runPromise(Effect.flatMap(JobStore, (s) => s.getHost(name)))
    expect((await post("/hosts/worker-a/drain")).status).toBe(200)
    expect(await host("worker-a")).toMatchObject({ value: { draining: true, drainExpiresAt: null } })
    expect((await post("/hosts/worker-a/resume")).status).toBe(200)
    expect(await host("worker-a")).toMatchObject({ value: { draining: false } })
    expect(await post("/leases/NightlyReport/clear")).toMatchObject({ status: 409 })
    expect((await post(`/leases/${encodeURIComponent(XSS.lease)}/clear`)).status).toBe(200)
    expect(await post(`/leases/${encodeURIComponent(XSS.lease)}/clear`)).toMatchObject({ status: 404 })
  })

  it("lists the limits set live with their slots in use; pauses, resumes and clears them with the token only", async () => {
    const post = (path: string, token = "t") => serve(request("POST", path, { "x-leasehold-token": token }), "t")
    const limits = () => runtime.runPromise(Limits.list)
    expect((await serve(request("GET", "/limits"))).body).toContain("No limits set live")
    await runtime.runPromise(Limits.set({ type: XSS.lease, concurrency: 2, rate: { limit: 5, period: "1 minute" } }))
    const page = await serve(request("GET", "/limits"), "t")
    expect(page.status).toBe(200)
    // hostile text stays text
    expect(page.body).not.toContain(XSS.lease)
    expect(page.body).toContain(escapeHtml(XSS.lease))
    expect(page.body).toMatch(/5 per 60s/)
    const path = `/limits/${encodeURIComponent(`type:${XSS.lease}`)}`
    expect(page.body).toContain(`data-action="${escapeHtml(path)}/pause"`)
    expect((await post(`${path}/pause`, "wrong")).status).toBe(401)
    expect(await limits()).toMatchObject([{ paused: false }])
    expect((await post(`${path}/pause`)).status).toBe(200)
    expect(await limits()).toMatchObject([{ paused: true, pausedBy: "dashboard" }])
    expect((await serve(request("GET", "/limits"), "t")).body).toContain(`data-action="${escapeHtml(path)}/resume"`)
    expect((await post(`${path}/resume`)).status).toBe(200)
    expect((await post(`${path}/clear`)).status).toBe(200)
    expect(await post(`${path}/clear`)).toMatchObject({ status: 404 })
    expect(await post(`/limits/${encodeURIComponent("planet:x")}/pause`)).toMatchObject({ status: 400 })
    expect(await limits()).toEqual([])
  })
})

describe("on tables that were never migrated", () => {
  const dir = mkdtempSync(join(tmpdir(), "leasehold-dash-unmigrated-"))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  // Nothing is created under these prefixes: nothing to drop after.
  const databases = [
    { name: "sqlite", url: () => join(dir, "empty.db") },
    { name: "postgres", url: () => PG_URL },
    { name: "mysql", url: () => MYSQL_URL }
  ]

  it.each(databases)("every page answers 503 saying how to migrate, every action 503 ($name)", async ({ url }) => {
    const prefix = uniquePrefix("unmigrated")
    const bare = ManagedRuntime.make(Layer.provide(servicesLayer(prefix), clientLayerForUrl(url())))
    try {
      const answer = (req: DashboardRequest) => bare.runPromise(handle({ base: "", token: "t" })(req))
      for (const path of ["/", "/jobs", "/jobs?status=failed", `/jobs/${DEAD_ID}`, "/leases", "/hosts", "/schedules"]) {
        const res = await answer(request("GET", path))
        expect({ path, status: res.status }).toEqual({ path, status: 503 })
        expect(res.body).toContain("<h1>Tables missing</h1>")
        expect(res.body).toMatch(new RegExp(`leasehold's tables \\(prefix ${prefix}\\) are missing: .*${prefix}`))
        expect(res.body).toContain(`<code>leasehold migrate --prefix ${prefix}</code>`)
        expect(res.body).toContain(`<code>Migrator.make({ prefix: &quot;${prefix}&quot; }).run</code>`)
        expect(res.body).not.toContain("Failed to prepare statement")
      }
      const post = await answer(request("POST", "/leases/x/clear", { "x-leasehold-token": "t" }))
      expect(post.status).toBe(503)
      expect(JSON.parse(post.body).error).toMatch(
        new RegExp(`^leasehold's tables \\(prefix ${prefix}\\) are missing \\(.*\\): run the migrations first`)
      )
    } finally {
      await bare.dispose()
    }
  })
})

describe("mounted on a node:http server", () => {
  it("links under the mount path (Express's req.baseUrl) and reports its own time", async () => {
    const handler = nodeHandler(await runtime.runtime())
    // What Express does for app.use("/admin/jobs", handler): strip the mount path, set baseUrl.
    const server = createServer((req, res) => {
      if (!req.url!.startsWith("/admin/jobs")) return void res.writeHead(404).end()
      Object.assign(req, { baseUrl: "/admin/jobs", url: req.url!.slice("/admin/jobs".length) || "/" })
      handler(req, res)
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/admin/jobs`
      const res = await fetch(`${base}/leases`)
      expect(res.status).toBe(200)
      expect(res.headers.get("server-timing")).toMatch(/^app;dur=\d+\.\d\d$/)
      const body = await res.text()
      expect(body).toContain(`href="/admin/jobs/assets/dashboard.css"`)
      expect(body).toContain(`href="/admin/jobs/hosts"`)
      expect((await fetch(`${base}/assets/dashboard.js`)).headers.get("content-type")).toContain("javascript")
    } finally {
      server.close()
    }
  })
})

describe("leasehold dashboard", () => {
  const dir = mkdtempSync(join(tmpdir(), "leasehold-dash-cli-"))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it("serves the dashboard until interrupted, then exits 0", { timeout: 60_000 }, async () => {
    const db = join(dir, "cli.db")
    const env = { ...process.env, LEASEHOLD_DATABASE_URL: db, NO_COLOR: "1" }
    expect((await runInProcess(["migrate"], { env })).code).toBe(0)
    // A free port, then the dashboard on it.
    const probe = createServer()
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve))
    const port = (probe.address() as AddressInfo).port
    await new Promise((resolve) => probe.close(resolve))
    const stop = new AbortController()
    const running = runInProcess(["dashboard", "--port", String(port)], { env, signal: stop.signal })
    try {
      let res: Response | undefined
      for (let i = 0; i < 200 && res === undefined; i++) {
        res = await fetch(`http://127.0.0.1:${port}/`).catch(() => undefined)
        if (res === undefined) await new Promise((r) => setTimeout(r, 50))
      }
      expect(res?.status).toBe(200)
      expect(await res!.text()).toContain("No jobs yet.")
      expect((await fetch(`http://127.0.0.1:${port}/jobs/x/retry`, { method: "POST" })).status).toBe(403)
    } finally {
      stop.abort()
    }
    const result = await running
    expect(result.code).toBe(0)
    expect(result.stdout).toBe(`leasehold dashboard on http://127.0.0.1:${port} (read-only); Ctrl-C to stop\n`)
  })

  it("refuses a missing SQLite file, like the other read commands", async () => {
    const result = await runInProcess(["dashboard", "--database-url", join(dir, "missing.db")])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("does not exist")
  })
})
