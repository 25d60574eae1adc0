/**
 * examples/http-app.mjs end to end, as a user runs it: plain `node`, importing the package by
 * its name ("leasehold/promise", the compiled build). An HTTP request enqueues, the worker in the
 * same process runs the job, and SIGTERM stops everything with exit code 0.
 */
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, expect, it } from "vitest"

const APP = join(import.meta.dirname, "..", "..", "examples", "http-app.mjs")
const dir = mkdtempSync(join(tmpdir(), "leasehold-http-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

it("POST /signup enqueues, the worker sends the email, SIGTERM exits 0", { timeout: 60_000 }, async () => {
  const app = spawn(process.execPath, [APP], {
    env: { ...process.env, LEASEHOLD_DATABASE_URL: join(dir, "app.db"), PORT: "0" },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  app.stdout.on("data", (d) => (stdout += String(d)))
  app.stderr.on("data", (d) => (stderr += String(d)))
  const exited = new Promise<number | null>((resolve) => app.on("exit", (code) => resolve(code)))
  try {
    const waitFor = async (pattern: RegExp) => {
      for (let i = 0; i < 600 && !pattern.test(stdout); i++) await new Promise((r) => setTimeout(r, 50))
      const found = pattern.exec(stdout)
      if (found === null) throw new Error(`no ${pattern} in output:\n${stdout}\n${stderr}`)
      return found
    }
    const base = `http://127.0.0.1:${(await waitFor(/listening on http:\/\/127\.0\.0\.1:(\d+)/))[1]}`

    const bad = await fetch(`${base}/signup`, { method: "POST", body: JSON.stringify({}) })
    expect(bad.status).toBe(400)
    const res = await fetch(`${base}/signup`, { method: "POST", body: JSON.stringify({ email: "ada@example.com" }) })
    expect(res.status).toBe(202)
    const { id } = (await res.json()) as { id: string }
    await waitFor(new RegExp(`welcome email to ada@example\\.com \\(job ${id}, attempt 1\\)`))
    for (let i = 0; i < 100; i++) {
      const job = (await (await fetch(`${base}/jobs/${id}`)).json()) as { status: string }
      if (job.status === "completed") break
      await new Promise((r) => setTimeout(r, 50))
    }
    expect(await (await fetch(`${base}/jobs/${id}`)).json()).toEqual({ id, status: "completed" })

    app.kill("SIGTERM")
    expect(await exited).toBe(0)
    // the app's own lines, in order (the worker's log lines may come between them)
    expect(stdout).toMatch(/SIGTERM: stopping\n[^]*stopped\n$/)
    expect(stderr).toBe("")
  } finally {
    app.kill("SIGKILL")
  }
})
