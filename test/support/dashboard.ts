/**
 * A dashboard over a seeded database for the dashboard tests: fixed ids, fixed times and a
 * clock that stands still at `NOW`, so every page (and its screenshot) is the same on every run
 * and every database. Some of the data is hostile (`<script>` in a payload, a type, a queue, a
 * key, an error, a lease and a host) to show it is escaped.
 */
import type { SqlClient } from "@effect/sql/SqlClient"
import { Clock, Effect, Layer, ManagedRuntime } from "effect"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { MINUTE_MS } from "../../src/core/browse.ts"
import type { Outcome } from "../../src/core/model.ts"
import { type DashboardServices, nodeHandler, servicesLayer } from "../../src/dashboard.ts"
import { JobLeases, JobStore } from "../../src/JobStore.ts"
import { ScheduleStore } from "../../src/ports/ScheduleStore.ts"
import * as Migrator from "../../src/runtime/migrate.ts"

/** The dashboard's "now" in every seeded test: 2026-10-03T15:00:32.175Z. */
export const NOW = 1_791_039_632_175

/** A clock that always reads `NOW` (sleeps are real). */
export const fixedClock = (base: Clock.Clock, now = NOW): Clock.Clock => ({
  [Clock.ClockTypeId]: Clock.ClockTypeId,
  currentTimeMillis: Effect.succeed(now),
  currentTimeNanos: Effect.succeed(BigInt(now) * 1_000_000n),
  unsafeCurrentTimeMillis: () => now,
  unsafeCurrentTimeNanos: () => BigInt(now) * 1_000_000n,
  sleep: (d) => base.sleep(d)
})

/** The hostile strings, each would raise a dialog if it ever became markup. */
export const XSS = {
  type: `<script>alert("type")</script>`,
  queue: `<img src=x onerror=alert("queue")>`,
  payload: `<script>alert("payload")</script>`,
  key: `"><script>alert("key")</script>`,
  error: `<script>alert("error")</script>`,
  lease: `<script>alert("lease")</script>`,
  host: `<script>alert("host")</script>`
}

/** The id of the dead job the browser test retries, and of the hostile one. */
export const DEAD_ID = "00000000-0000-4000-8000-00000000d0d0"
export const XSS_ID = "00000000-0000-4000-8000-0000000000ff"

const id = (n: number) => `00000000-0000-4000-8000-${n.toString().padStart(12, "0")}`

/** How many jobs `seed` writes. */
export const SEEDED_JOBS = 79

/**
 * Writes the jobs, hosts and leases the pages show, under migrated tables: 60 jobs finished
 * over the last hour (some dead), pending, processing (one holding a lease), an expired lease,
 * hosts running, draining and gone, two lost leases, and three schedules.
 */
export const seed = Effect.gen(function*() {
  const store = yield* JobStore
  const leases = yield* JobLeases
  const types = ["SendReceipt", "SyncAccount", "NightlyReport"]
  const queues = ["default", "emails", "reports"]
  const run = (
    n: number,
    at: number,
    outcome: Outcome | undefined,
    extra: { name?: string; queue?: string; payload?: string; key?: string; jobId?: string } = {}
  ) =>
    Effect.gen(function*() {
      const jobId = extra.jobId ?? id(n)
      yield* store.insert({
        id: jobId,
        name: extra.name ?? types[n % 3]!,
        queue: extra.queue ?? queues[n % 3]!,
        payload: extra.payload ??
          JSON.stringify({ accountId: 1000 + n, email: `user${n}@example.com`, items: [n, n * 2] }),
        priority: 0,
        maxRetries: 0,
        claimTimeout: 60,
        uniqueKey: extra.key ?? jobId,
        runAt: at,
        now: at
      })
      const token = `token-${jobId.slice(-12)}`
      yield* attempt(jobId, at, n % 2 === 0 ? "worker-a" : "worker-b", token)
      if (outcome !== undefined) yield* store.finish({ id: jobId, token, now: at + 1500 + (n % 7) * 400, outcome })
      return token
    })
  // Claims the one due job, `jobId`, at `at`.
  const attempt = (jobId: string, at: number, host: string, token: string) =>
    Effect.gen(function*() {
      const claimed = yield* store.claim({
        queues: undefined,
        host,
        now: at,
        claimToken: token,
        timeoutCap: undefined,
        hostCap: undefined
      })
      if (claimed._tag !== "Claimed" || claimed.job.id !== jobId) {
        return yield* Effect.die(`seed: claimed ${JSON.stringify(claimed)}`)
      }
    })
  // The last hour: completions every minute, a death now and then.
  for (let n = 1; n <= 60; n++) {
    const at = NOW - 60 * MINUTE_MS + n * MINUTE_MS - 20_000
    const outcome: Outcome = n % 9 === 0
      ? { _tag: "Kill", error: `SmtpError: 550 mailbox unavailable (attempt ${n})` }
      : { _tag: "Complete" }
    yield* run(n, at, outcome)
  }
  // The dead job: three attempts on two hosts, the last one fatal.
  yield* store.insert({
    id: DEAD_ID,
    name: "SyncAccount",
    queue: "default",
    payload: JSON.stringify({ accountId: 1061, email: "user61@example.com", items: [61, 122] }),
    priority: 0,
    maxRetries: 2,
    claimTimeout: 60,
    uniqueKey: DEAD_ID,
    runAt: NOW - 300_000,
    now: NOW - 300_000
  })
  const tries: ReadonlyArray<readonly [number, string, Outcome]> = [
    [NOW - 300_000, "worker-a", {
      _tag: "Retry",
      runAt: NOW - 240_000,
      error: "HttpError: 502 Bad Gateway from https://api.example.com/accounts/1061"
    }],
    [NOW - 240_000, "worker-b", {
      _tag: "Retry",
      runAt: NOW - 90_000,
      error: "TimeoutException: perform took longer than 60 seconds"
    }],
    [NOW - 90_000, "worker-b", {
      _tag: "Kill",
      error:
        "HttpError: 503 Service Unavailable from https://api.example.com/accounts/1061\n    at sync (jobs/sync.ts:42:11)"
    }]
  ]
  for (const [i, [at, host, outcome]] of tries.entries()) {
    const token = `token-00000000d0d${i}`
    yield* attempt(DEAD_ID, at, host, token)
    yield* store.finish({ id: DEAD_ID, token, now: at + 2100 + i * 1300, outcome })
  }
  // Running now; one holds the nightly report's lease.
  const reportToken = yield* run(62, NOW - 40_000, undefined, { name: "NightlyReport", queue: "reports" })
  yield* run(63, NOW - 12_000, undefined)
  yield* leases.tryAcquire({
    name: "NightlyReport",
    owner: reportToken,
    host: "worker-b",
    now: NOW - 40_000,
    ttlMs: 120_000
  })
  // A lease whose holder vanished an hour ago: expired, for the clear action.
  yield* leases.tryAcquire({
    name: XSS.lease,
    owner: "token-vanished",
    host: XSS.host,
    now: NOW - 3_600_000,
    ttlMs: 120_000
  })
  // The newest job (created last but one: the waiting jobs below are older) is hostile everywhere it can be.
  yield* run(79, NOW - 500, { _tag: "Kill", error: XSS.error }, {
    jobId: XSS_ID,
    name: XSS.type,
    queue: XSS.queue,
    payload: JSON.stringify({ note: XSS.payload, [XSS.key]: [1, 2] }),
    key: XSS.key
  })
  // Waiting: some due, some later.
  for (let n = 64; n <= 78; n++) {
    yield* store.insert({
      id: id(n),
      name: types[n % 3]!,
      queue: queues[n % 3]!,
      payload: JSON.stringify({ accountId: 1000 + n }),
      priority: 0,
      maxRetries: 3,
      claimTimeout: 60,
      uniqueKey: id(n),
      runAt: NOW + (n - 70) * 45_000,
      now: NOW - (79 - n) * 1000
    })
  }
  // Leases lost: one by a run that ended, one (hostile) by a run that timed out.
  yield* store.recordLostLease({
    id: "00000000-0000-4000-8000-0000000010a1",
    leaseName: "key:acct-1042",
    jobId: id(42),
    jobName: types[42 % 3]!,
    attempt: 1,
    host: "worker-a",
    fencingToken: 17n,
    holder: "token-000000000043",
    lostAt: NOW - 25 * MINUTE_MS,
    detected: "ended"
  })
  yield* store.recordLostLease({
    id: "00000000-0000-4000-8000-0000000010a2",
    leaseName: XSS.lease,
    jobId: XSS_ID,
    jobName: XSS.type,
    attempt: 1,
    host: XSS.host,
    fencingToken: 3n,
    holder: null,
    lostAt: NOW - 3 * MINUTE_MS,
    detected: "timed out"
  })
  // Schedules: one handled on time, one whose next slot is due (no worker ran since), one hostile.
  const schedules = yield* ScheduleStore
  const at = (iso: string) => Date.parse(iso)
  const created = NOW - 30 * 86_400_000
  for (
    const row of [
      {
        name: "NightlyReport",
        cron: "0 3 * * *",
        timeZone: "Europe/Berlin",
        catchUp: "once",
        lastSlot: at("2026-10-03T01:00:00Z"),
        nextSlot: at("2026-10-04T01:00:00Z")
      },
      {
        name: "SyncAccount",
        cron: "*/15 * * * *",
        timeZone: "UTC",
        catchUp: "skip",
        lastSlot: at("2026-10-03T14:30:00Z"),
        nextSlot: at("2026-10-03T14:45:00Z")
      },
      {
        name: XSS.type,
        cron: "0 * * * *",
        timeZone: "UTC",
        catchUp: "once",
        lastSlot: null,
        nextSlot: at("2026-10-03T16:00:00Z")
      }
    ] as const
  ) yield* schedules.register({ ...row, createdAt: created, updatedAt: row.lastSlot ?? created })
  yield* store.touchHost("worker-a", NOW - 4000, { maxConcurrent: 8, codeVersion: "2026.10.1" })
  yield* store.touchHost("worker-b", NOW - 9000, { maxConcurrent: 0, codeVersion: "2026.10.1" })
  yield* store.drain("worker-c", NOW - 20_000, NOW + 15 * MINUTE_MS)
  yield* store.touchHost(XSS.host, NOW - 3_600_000, { maxConcurrent: 4, codeVersion: XSS.key })
})

/** A running dashboard over a seeded database. */
export interface SeededDashboard {
  readonly url: string
  readonly runtime: ManagedRuntime.ManagedRuntime<DashboardServices, unknown>
  readonly close: () => Promise<void>
}

/**
 * Migrates `prefix` over `client`, seeds it, and serves a dashboard on it (127.0.0.1, a free
 * port) whose clock stands at `NOW`, with action token `token`.
 */
export const startSeeded = async (
  client: Layer.Layer<SqlClient, unknown>,
  prefix: string,
  token: string | undefined
): Promise<SeededDashboard> => {
  const base = client
  const runtime = ManagedRuntime.make(
    Layer.mergeAll(Layer.provide(servicesLayer(prefix), base), base, Layer.setClock(fixedClock(Clock.make())))
  )
  await runtime.runPromise(Effect.flatMap(Migrator.make({ prefix }), (m) => m.run))
  await runtime.runPromise(seed)
  const handler = nodeHandler(await runtime.runtime(), { token })
  const server: Server = createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}`,
    runtime,
    close: async () => {
      // A browser keeps its keep-alive sockets open; close() alone waits for them (up to the
      // hook's timeout), so they are cut once the server stops taking new ones.
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
      await runtime.dispose()
    }
  }
}
