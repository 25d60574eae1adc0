/**
 * The dashboard in a real browser: Debian's chromium driven by playwright-core (no browser
 * download; .ci/run installs the package). On SQLite and on PostgreSQL it opens every page of a
 * seeded dashboard (test/support/dashboard.ts), checks that hostile data stayed text (no dialog,
 * no element but ours), pages through the jobs by keyset, filters them, retries a dead job by
 * clicking, after which the job shows pending, cancels a pending one and discards a dead one. The PostgreSQL run writes a screenshot of each page
 * to docs/img/ (the README shows them); the seeded data and the clock are fixed, so they only
 * change when the pages do.
 */
import { Effect, Option } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type BrowserContext, chromium, type Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { clientLayerForUrl } from "../../src/adapters/clients.ts"
import { JobStore } from "../../src/JobStore.ts"
import { DEAD_ID, NOW, SEEDED_JOBS, type SeededDashboard, startSeeded, XSS, XSS_ID } from "../support/dashboard.ts"
import { dropPrefixed } from "../support/databases.ts"
import { PG_URL, uniquePrefix } from "../support/urls.ts"

/** A seeded pending job (test/support/dashboard.ts), and a dead one. */
const PENDING_ID = "00000000-0000-4000-8000-000000000070"
const PENDING_NAME = "SyncAccount"
const DISCARD_ID = "00000000-0000-4000-8000-000000000018"

const IMG = join(import.meta.dirname, "..", "..", "docs", "img")
const TOKEN = "s3cret-token"
const profile = mkdtempSync(join(tmpdir(), "leasehold-chromium-"))
const sqliteDir = mkdtempSync(join(tmpdir(), "leasehold-dash-"))
let browser: BrowserContext

beforeAll(async () => {
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1200, height: 900 },
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync"
    ]
  })
})

afterAll(async () => {
  await browser?.close()
  rmSync(profile, { recursive: true, force: true })
  rmSync(sqliteDir, { recursive: true, force: true })
})

/**
 * A page that fails the test on any alert or prompt (an escaped `<script>` never opens one) or
 * script error. An action's confirm question is accepted, and kept in `confirmed`.
 */
const open = async (url: string): Promise<{ page: Page; problems: Array<string>; confirmed: Array<string> }> => {
  const page = await browser.newPage()
  const problems: Array<string> = []
  const confirmed: Array<string> = []
  page.on("dialog", (d) => {
    if (d.type() === "confirm") {
      confirmed.push(d.message())
      return void d.accept()
    }
    problems.push(`dialog: ${d.message()}`)
    void d.dismiss()
  })
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`))
  await page.goto(url)
  return { page, problems, confirmed }
}

/** Nothing of the hostile data became an element: our one script, no images. */
const onlyOurMarkup = async (page: Page) => {
  expect(await page.locator("script").count()).toBe(1)
  expect(await page.locator("img").count()).toBe(0)
}

const DATABASES = [
  { name: "sqlite", url: () => join(sqliteDir, "dash.db"), screenshots: false },
  { name: "postgres", url: () => PG_URL, screenshots: true }
] as const

describe.each(DATABASES)("the dashboard on $name", { timeout: 90_000 }, (database) => {
  const prefix = uniquePrefix("dash")
  let dash: SeededDashboard
  const shot = async (page: Page, name: string) => {
    const png = await page.screenshot({ fullPage: true })
    expect(png.length).toBeGreaterThan(1000)
    if (database.screenshots) writeFileSync(join(IMG, `dashboard-${name}.png`), png)
  }

  beforeAll(async () => {
    dash = await startSeeded(clientLayerForUrl(database.url()), prefix, TOKEN)
  }, 60_000)
  afterAll(async () => {
    if (database.name === "postgres" && dash !== undefined) {
      await dash.runtime.runPromise(dropPrefixed(prefix) as unknown as Effect.Effect<void, unknown, never>)
    }
    await dash?.close()
  })

  it("overview: counts per queue and status, the last hour as a chart, the oldest due job", async () => {
    const { page, problems } = await open(`${dash.url}/`)
    await expect.poll(() => page.locator("h1").textContent()).toBe("Overview")
    const stats = await page.locator("dl.stats").textContent()
    expect(stats).toContain("oldest due job waiting")
    // The oldest due pending job became due 6 × 45 s = 4.5 min before NOW.
    expect(stats).toContain("5m")
    expect(await page.locator("figure.chart rect.bar-completed").count()).toBeGreaterThan(40)
    expect(await page.locator("figure.chart rect.bar-failed").count()).toBeGreaterThan(3)
    expect(await page.locator("table").textContent()).toContain(XSS.queue)
    await onlyOurMarkup(page)
    await shot(page, "overview")
    // Live refresh: the script swaps in a fresh <main> without a reload.
    await expect.poll(() => page.locator("main").getAttribute("data-refreshed"), { timeout: 12_000 }).not.toBeNull()
    expect(await page.locator("h1").textContent()).toBe("Overview")
    expect(problems).toEqual([])
    await page.close()
  })

  it("jobs: newest first, 50 a page by keyset, filtered by status", async () => {
    const { page, problems } = await open(`${dash.url}/jobs`)
    const ids = async () => page.locator("tbody tr td:first-child a").allTextContents()
    const first = await ids()
    expect(first).toHaveLength(50)
    expect(first[0]).toBe(XSS_ID)
    expect(await page.locator("tbody").textContent()).toContain(XSS.type)
    await onlyOurMarkup(page)
    await shot(page, "jobs")
    await page.getByRole("link", { name: "Older »" }).click()
    await expect.poll(() => page.url()).toContain("after=")
    const second = await ids()
    expect(second).toHaveLength(SEEDED_JOBS - 50)
    expect(second.filter((id) => first.includes(id))).toEqual([])
    expect(await page.getByRole("link", { name: "Older »" }).count()).toBe(0)
    await page.selectOption("select[name=status]", "failed")
    await page.getByRole("button", { name: "Filter" }).click()
    await expect.poll(() => page.url()).toContain("status=failed")
    const statuses = await page.locator("tbody .status").allTextContents()
    expect(statuses.length).toBe(8)
    expect(new Set(statuses)).toEqual(new Set(["failed"]))
    expect(problems).toEqual([])
    await page.close()
  })

  it("job: hostile payload, key, type and error are shown as text", async () => {
    const { page, problems } = await open(`${dash.url}/jobs/${XSS_ID}`)
    expect(await page.locator("pre.payload").textContent()).toContain(JSON.stringify(XSS.payload).slice(1, -1))
    expect(await page.locator("pre.payload").textContent()).toContain(JSON.stringify(XSS.key).slice(1, -1))
    expect(await page.locator("pre.error").textContent()).toBe(XSS.error)
    expect(await page.locator("dl.fields").textContent()).toContain(XSS.type)
    expect(await page.locator("#attempts tbody tr td:last-child").allTextContents()).toEqual([XSS.error])
    await onlyOurMarkup(page)
    expect(problems).toEqual([])
    await page.close()
  })

  it("leases and hosts: holders, expiry, leases lost recently, drains and gone hosts", async () => {
    const leases = await open(`${dash.url}/leases`)
    const rows = await leases.page.locator("main > table tbody tr").allTextContents()
    expect(rows).toHaveLength(2)
    expect(rows.find((r) => r.startsWith("NightlyReport"))).toContain("in 80s")
    expect(rows.find((r) => r.startsWith(XSS.lease))).toContain("expired")
    // Recently lost, newest first, each linking to its run's job.
    const lost = leases.page.locator("#lost tbody tr")
    expect(await lost.locator("td:nth-child(2)").allTextContents()).toEqual([XSS.lease, "key:acct-1042"])
    expect(await lost.locator("td:last-child").allTextContents()).toEqual(["timed out", "ended"])
    expect(await lost.locator("td:nth-child(3) a").first().getAttribute("href")).toBe(`/jobs/${XSS_ID}`)
    await onlyOurMarkup(leases.page)
    await shot(leases.page, "leases")
    expect(leases.problems).toEqual([])
    await leases.page.close()

    const hosts = await open(`${dash.url}/hosts`)
    const text = await hosts.page.locator("tbody").textContent()
    expect(text).toContain(XSS.host)
    expect(await hosts.page.locator(".gone").count()).toBe(1)
    expect(await hosts.page.locator("tbody tr").count()).toBe(4)
    await onlyOurMarkup(hosts.page)
    await shot(hosts.page, "hosts")
    expect(hosts.problems).toEqual([])
    await hosts.page.close()
  })

  it("schedules: cron, time zone, catch-up, last and next slot, a missed slot marked due", async () => {
    const { page, problems } = await open(`${dash.url}/`)
    await page.getByRole("link", { name: "Schedules" }).click()
    await expect.poll(() => page.locator("h1").textContent()).toBe("Schedules")
    const names = await page.locator("tbody tr td:first-child").allTextContents()
    expect(names).toEqual([XSS.type, "NightlyReport", "SyncAccount"])
    const rows = await page.locator("tbody tr").allTextContents()
    expect(rows[1]).toContain("Europe/Berlin")
    expect(rows[2]).toContain("due")
    await onlyOurMarkup(page)
    await shot(page, "schedules")
    expect(problems).toEqual([])
    await page.close()
  })

  it("a dead job's attempts; retrying it by clicking puts it back to pending", async () => {
    const { page, problems } = await open(`${dash.url}/jobs/${DEAD_ID}`)
    expect(await page.locator("dl.fields .status").textContent()).toBe("failed")
    // Its attempts, newest first: two retried failures on two hosts, then the fatal one.
    const attempts = page.locator("#attempts tbody tr")
    expect(await attempts.locator("td:nth-child(5)").allTextContents()).toEqual(["dead", "failed", "failed"])
    expect(await attempts.locator("td:nth-child(6)").allTextContents()).toEqual(["worker-b", "worker-b", "worker-a"])
    expect(await attempts.first().locator("td:last-child").textContent()).toContain("at sync (jobs/sync.ts:42:11)")
    await shot(page, "job")
    // Without the token the server refuses, and nothing changes.
    await page.getByRole("button", { name: "Retry" }).click()
    await expect.poll(() => page.locator("#flash").textContent()).toContain("valid token")
    expect(await page.locator("dl.fields .status").textContent()).toBe("failed")
    await page.fill("#token-form input[name=token]", TOKEN)
    await page.getByRole("button", { name: "Use token" }).click()
    await page.getByRole("button", { name: "Retry" }).click()
    await expect.poll(() => page.locator("#flash").textContent()).toBe(`job ${DEAD_ID} is pending again`)
    await expect.poll(() => page.locator("dl.fields .status").textContent()).toBe("pending")
    expect(await page.getByRole("button", { name: "Retry" }).count()).toBe(0)
    const row = await dash.runtime.runPromise(Effect.flatMap(JobStore, (s) => s.get(DEAD_ID)))
    expect(Option.map(row, (r) => [r.status, r.attempts, r.runAt])).toEqual(Option.some(["pending", 0, NOW]))
    expect(problems).toEqual([])
    await page.close()
  })

  it("cancelling a pending job by clicking shows it cancelled", async () => {
    const { confirmed, page, problems } = await open(`${dash.url}/jobs/${PENDING_ID}`)
    expect(await page.locator("dl.fields .status").textContent()).toBe("pending")
    await page.fill("#token-form input[name=token]", TOKEN)
    await page.getByRole("button", { name: "Use token" }).click()
    await page.getByRole("button", { name: "Cancel" }).click()
    await expect.poll(() => page.locator("#flash").textContent()).toBe(`job ${PENDING_ID} is cancelled`)
    expect(confirmed).toEqual([`Cancel the pending job ${PENDING_NAME} ${PENDING_ID}?`])
    await expect.poll(() => page.locator("dl.fields .status").textContent()).toBe("cancelled")
    expect(await page.getByRole("button", { name: "Cancel" }).count()).toBe(0)
    const row = await dash.runtime.runPromise(Effect.flatMap(JobStore, (s) => s.get(PENDING_ID)))
    expect(Option.map(row, (r) => r.status)).toEqual(Option.some("cancelled"))
    expect(problems).toEqual([])
    await page.close()
  })

  it("discarding a dead job by clicking deletes it and goes to the dead jobs", async () => {
    const { confirmed, page, problems } = await open(`${dash.url}/jobs/${DISCARD_ID}`)
    await page.fill("#token-form input[name=token]", TOKEN)
    await page.getByRole("button", { name: "Use token" }).click()
    await page.getByRole("button", { name: "Discard" }).click()
    await expect.poll(() => page.url()).toBe(`${dash.url}/jobs?status=failed`)
    await expect.poll(() => page.locator("#flash").textContent()).toBe(`discarded job ${DISCARD_ID}`)
    expect(confirmed).toHaveLength(1)
    expect(await page.locator("tbody").textContent()).not.toContain(DISCARD_ID)
    const row = await dash.runtime.runPromise(Effect.flatMap(JobStore, (s) => s.get(DISCARD_ID)))
    expect(Option.isNone(row)).toBe(true)
    expect(problems).toEqual([])
    await page.close()
  })
})
