/**
 * The chaos controller (scripts/chaos/chaos.ts) ends a pause with SIGCONT from a timer. On SQLite
 * a worker can be stopped while it holds the write lock, and the controller's own enqueue then
 * waits for that lock inside better-sqlite3, which is synchronous: with the driver's default busy
 * timeout (5 s a try, nine tries) the timer cannot fire, the enqueue gives up after 45 s and the
 * pause lasts as long — a flake of test/e2e/chaos-smoke.test.ts. The controller's layer
 * (`controllerSqlLayer`) waits only briefly, so its timers run between tries.
 *
 * Here a child process takes the write lock and lets go only when the parent's timer tells it
 * to; the enqueue, retried as the controller retries it, must succeed. With the default busy
 * timeout its first try alone blocks for 45 s, past the 20 s bound, and the test fails.
 */
import { Effect, Layer, ManagedRuntime, Schema } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createInterface } from "node:readline"
import { expect, it } from "vitest"
import { controllerSqlLayer, retryFor } from "../../scripts/chaos/db.ts"
import { Job, JobStore, Migrator } from "../../src/index.ts"
import * as SqlJobStore from "../../src/adapters/sql/JobStore.ts"

/** Takes SQLite's write lock on LOCK_FILE, says LOCKED, and commits once a line comes on stdin. */
const HOLDER = `
const Database = require("better-sqlite3")
const db = new Database(process.env.LOCK_FILE)
db.exec("BEGIN IMMEDIATE")
process.stdout.write("LOCKED\\n")
require("node:fs").readSync(0, Buffer.alloc(16))
db.exec("COMMIT")
db.close()
`

const Probe = Job.define({ name: "LockProbe", schema: Schema.Struct({ n: Schema.Number }), perform: () => Effect.void })

it("the controller's SQLite enqueue lets its timers run while a worker holds the write lock", async () => {
  const dir = mkdtempSync(join(tmpdir(), "leasehold-chaos-lock-"))
  const file = join(dir, "lock.db")
  const prefix = "lock_"
  const rt = ManagedRuntime.make(SqlJobStore.layer({ prefix }).pipe(Layer.provideMerge(controllerSqlLayer(file))))
  let holder: ChildProcess | undefined
  try {
    await rt.runPromise(Effect.flatMap(Migrator.make({ prefix }), (m) => m.run))
    const h = spawn(process.execPath, ["-e", HOLDER], {
      cwd: process.cwd(),
      env: { ...process.env, LOCK_FILE: file },
      stdio: ["pipe", "pipe", "inherit"]
    })
    holder = h
    h.stdin.on("error", () => undefined)
    const exited = new Promise<number | null>((resolve) => h.once("exit", (code) => resolve(code)))
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: h.stdout }).on("line", (line) => line === "LOCKED" && resolve())
      void exited.then((code) => reject(new Error(`the lock holder exited (${code}) before it locked`)))
    })
    let released = false
    setTimeout(() => {
      released = true
      h.stdin.end("go\n")
    }, 100)
    // 20 s: the bound the controller gave an enqueue before it waited for a pause to end.
    const result = await rt.runPromise(retryFor(Job.enqueue(Probe, { n: 1 }), 20_000, 100))
    expect(released).toBe(true)
    expect(result.duplicate).toBe(false)
    expect(await exited).toBe(0)
  } finally {
    holder?.kill("SIGKILL")
    await rt.dispose()
    rmSync(dir, { recursive: true, force: true })
  }
}, 120_000)
