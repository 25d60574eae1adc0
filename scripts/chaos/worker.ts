/**
 * The chaos worker entry: one leasehold worker process, built only from the library's public API
 * (`Leasehold.layer` + `Worker.make` over the SqlClient for a database URL), started by run.ts.
 *
 *   node --import tsx scripts/chaos/worker.ts      (configured through the environment)
 *
 * CHAOS_DB_URL        postgres://…, mysql://…, or an SQLite file path
 * CHAOS_PREFIX        the run's table prefix (tables already migrated by the controller)
 * CHAOS_HOST          this worker's host name; when unset, the process loads everything and
 *                     waits as a warm spare: it prints `LOADED <pid>` and starts on a stdin line
 *                     `START <host> <skewMs>` (so a replacement after a kill -9 starts at once,
 *                     even on a loaded machine where loading takes many seconds)
 * CHAOS_CONCURRENCY   attempts at once (default 3)
 * CHAOS_POLL_MS       idle poll interval, wall-clock ms (default 200)
 * CHAOS_REAP_MS       reaper interval, wall-clock ms (default 2500)
 * CHAOS_SPEED, CHAOS_ANCHOR_MS, CHAOS_SKEW_MS   the chaos clock (clock.ts); a non-zero skew makes
 *                     this the worker whose Clock is wrong
 *
 * It prints `READY <host> <pid>` on stdout once the worker runs, logs to stderr, stops gracefully
 * on SIGTERM/SIGINT (grace 2 s), and exits by itself when its stdin closes (the controller died).
 */
import { NodeRuntime } from "@effect/platform-node"
import { createInterface } from "node:readline"
import { Duration, Effect, Layer, Logger, LogLevel } from "effect"
import { Leasehold, Worker } from "../../src/index.ts"
import { chaosClock, chaosTimeOf, clockConfigFromEnv } from "./clock.ts"
import { preloadDriver, retryFor, sqlLayer } from "./db.ts"
import { chaosJobsFor, History, historyLayer, JOB_TIMEOUT_SECONDS, recordOutcome } from "./jobs.ts"

const die = (message: string): never => {
  process.stderr.write(`chaos worker: ${message}\n`)
  process.exit(2)
}

const env = (name: string): string => {
  const v = process.env[name]
  return v === undefined || v === "" ? die(`${name} is not set`) : v
}
const intEnv = (name: string, fallback: number): number => {
  const raw = process.env[name]
  const n = raw === undefined || raw === "" ? fallback : Number(raw)
  return !Number.isSafeInteger(n) || n < 1 ? die(`${name} must be a positive integer, got ${raw}`) : n
}

const url = env("CHAOS_DB_URL")
const prefix = env("CHAOS_PREFIX")
const concurrency = intEnv("CHAOS_CONCURRENCY", 3)
const pollMs = intEnv("CHAOS_POLL_MS", 200)
const reapMs = intEnv("CHAOS_REAP_MS", 2500)

// The controller keeps our stdin open; when it goes away, so do we.
const lines = createInterface({ input: process.stdin })
lines.on("close", () => process.exit(3))
process.stdin.on("error", () => process.exit(3))

/** This worker's host and skew: from the environment, or from the START line of a warm spare. */
const identity = (): Promise<{ readonly host: string; readonly skewMs: number }> => {
  const host = process.env.CHAOS_HOST
  if (host !== undefined && host !== "") {
    return Promise.resolve({ host, skewMs: clockConfigFromEnv(process.env).skewMs })
  }
  process.stdout.write(`LOADED ${process.pid}\n`)
  return new Promise((resolve) => {
    lines.once("line", (line) => {
      const [word, h, skew] = line.trim().split(/\s+/)
      const skewMs = Number(skew ?? "0")
      if (word !== "START" || h === undefined || !Number.isSafeInteger(skewMs)) die(`bad start line: ${line}`)
      resolve({ host: h!, skewMs })
    })
  })
}
await preloadDriver(url)
const { host, skewMs } = await identity()
const clockConfig = { ...clockConfigFromEnv(process.env), skewMs }

const services = Leasehold.layer({ prefix, jobs: chaosJobsFor(clockConfig.speed) }).pipe(
  Layer.provideMerge(historyLayer(prefix)),
  Layer.provideMerge(sqlLayer(url))
)

const program = Effect.gen(function*() {
  const history = yield* History
  const handle = yield* Worker.make({
    host,
    concurrency,
    pollInterval: Duration.millis(pollMs),
    reapInterval: Duration.millis(reapMs),
    gracePeriod: "2 seconds",
    timeoutCap: `${JOB_TIMEOUT_SECONDS} seconds`,
    onResult: (result) => Effect.provideService(recordOutcome(host)(result), History, history)
  })
  const now = Date.now()
  yield* Effect.logInfo(
    `chaos worker ${handle.host} pid ${process.pid}: clock speed ${clockConfig.speed}, skew ${clockConfig.skewMs} ms ` +
      `(Clock reads ${chaosTimeOf(clockConfig, now) + clockConfig.skewMs}, wall ${now})`
  )
  process.stdout.write(`READY ${handle.host} ${process.pid}\n`)
  return yield* Effect.never
})

// The server may be restarting while a replacement worker starts: retry building for 90 s.
const main = retryFor(Effect.scoped(Effect.provide(program, services)), 90_000, 1000).pipe(
  Effect.withClock(chaosClock(clockConfig)),
  Effect.provide(Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger))),
  Logger.withMinimumLogLevel(LogLevel.Info)
)

NodeRuntime.runMain(main)
