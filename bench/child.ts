/**
 * One benchmark run in its own process: `node --expose-gc bench/.build/child.js '<spec>'`,
 * started by `bench/run.ts` on a database created for it. Prints one line
 * `@@BENCH_RESULT {json}` (a `ChildResult`) on stdout and exits.
 */
import { percentile, mean } from "./lib/stats.ts"
import { startCpu } from "./lib/cpu.ts"
import { peakMb, processMaxMb, resetPeak } from "./lib/rss.ts"
import type { DrainHooks, JobSystemDriver } from "./systems/types.ts"
import { spawn } from "node:child_process"
import { type ChildResult, type ChildSpec, ENQUEUER_FLAG, RESULT_PREFIX, type SystemId } from "./protocol.ts"

/**
 * Only the driver under test is loaded, so the child's RSS holds that system's code and no
 * other's (every child pays the same for tsx and this file).
 */
const loadDriver = async (system: SystemId): Promise<JobSystemDriver | undefined> => {
  switch (system) {
    case "leasehold-pg":
    case "leasehold-mariadb":
    case "leasehold-sqlite":
    case "leasehold-galera-one":
    case "leasehold-galera":
      return (await import("./systems/leasehold.ts")).leasehold
    case "graphile-worker":
      return (await import("./systems/graphile.ts")).graphileWorker
    case "pg-boss":
      return (await import("./systems/pgboss.ts")).pgBoss
    case "raw-pg":
    case "pg-advisory":
      return undefined
  }
}

const need = <A>(value: A | undefined, what: string): A => {
  if (value === undefined) throw new Error(`${what} is not implemented`)
  return value
}

const param = (spec: ChildSpec, key: string): number => need(spec.params[key], `parameter ${key}`)

// The server whose CPU a drain is charged with (SQLite runs in this process: its time is Node's).
const serverOf = (system: SystemId): "postgres" | "mariadb" | "none" =>
  system === "leasehold-mariadb" ? "mariadb" : system === "leasehold-sqlite" ? "none" : "postgres"

let stopCpu: ReturnType<typeof startCpu> | undefined
const hooks = (system: SystemId, spec: ChildSpec): DrainHooks => ({
  drainStarting: () => {
    resetPeak()
    stopCpu = startCpu(serverOf(system))
  },
  background: { finished: spec.params.finished ?? 0, future: spec.params.future ?? 0 }
})

/**
 * Runs one spec and returns its figures; a scenario the orchestrator summarises itself puts the
 * raw values it needs in `series` (bench/scenarios.ts, `fromSeries`).
 */
const runSpec = async (
  spec: ChildSpec,
  series: Record<string, ReadonlyArray<number>>
): Promise<Record<string, number>> => {
  if (spec.scenario === "leaselock") {
    const n = param(spec, "pairs")
    const LeaseLockBench = await import("./systems/leaselock.ts")
    const r = spec.system === "raw-pg"
      ? await LeaseLockBench.rawPg(spec.url, n)
      : spec.system === "pg-advisory"
      ? await LeaseLockBench.pgAdvisory(spec.url, n)
      : await LeaseLockBench.leasehold(spec.url, n)
    return { pairs: r.pairs, ms: r.ms, pairsPerSec: (r.pairs / r.ms) * 1000, statementsPerPair: r.statementsPerPair }
  }
  if (spec.scenario === "dashboard") {
    const Dashboard = await import("./systems/dashboard.ts")
    return Dashboard.jobsPage(spec.url, param(spec, "jobs"), param(spec, "requests"))
  }
  const driver = need(await loadDriver(spec.system), `system ${spec.system}`)
  const label = `${spec.system} ${spec.scenario}`
  switch (spec.scenario) {
    case "throughput":
    case "scale5k":
    case "scale100k":
    case "bigtable":
    case "bigfuture":
    case "exclusive": {
      const f = spec.scenario === "exclusive" ? driver.exclusiveThroughput : driver.throughput
      const r = await need(f, label)(
        spec.url,
        param(spec, "jobs"),
        param(spec, "concurrency"),
        hooks(spec.system, spec)
      )
      return {
        ...stopCpu?.(r.jobs),
        jobs: r.jobs,
        ms: r.ms,
        jobsPerSec: (r.jobs / r.ms) * 1000,
        peakRssMb: peakMb(),
        processMaxRssMb: processMaxMb()
      }
    }
    case "hotkey": {
      const r = await need(driver.hotKey, label)(
        spec.url,
        param(spec, "jobs"),
        param(spec, "sleepMs"),
        param(spec, "workers")
      )
      const idealMs = r.jobs * r.sleepMs
      return {
        jobs: r.jobs,
        ms: r.ms,
        idealMs,
        overIdeal: r.ms / idealMs,
        ...(r.statements === undefined ? {} : { statementsPerJob: r.statements / r.jobs }),
        ...(r.startStatements === undefined ? {} : { startStatements: r.startStatements })
      }
    }
    case "ratelimit": {
      const periodMs = param(spec, "periodMs")
      const r = await need(driver.rateLimit, label)(
        spec.url,
        param(spec, "jobs"),
        param(spec, "concurrency"),
        param(spec, "limit"),
        periodMs
      )
      if (r.startsMs.length !== r.jobs) throw new Error(`${r.startsMs.length} performs started for ${r.jobs} jobs`)
      // The sliding windows over the starts are counted by the orchestrator, from these.
      series.startsMs = r.startsMs
      return {
        jobs: r.jobs,
        periodMs,
        drainMs: r.drainMs,
        firstStartMs: Math.min(...r.startsMs) - r.workerStartMs,
        claimsPerJob: r.results / r.jobs,
        rateDeferralsPerJob: r.rateDeferrals / r.jobs,
        keyDeferralsPerJob: r.keyDeferrals / r.jobs,
        maxDeferralsOfOneJob: r.maxDeferralsOfOneJob,
        deferredJobs: r.lateMs.length,
        ...(r.lateMs.length === 0 ? {} : {
          lateP50Ms: percentile(r.lateMs, 50),
          lateP99Ms: percentile(r.lateMs, 99),
          lateMaxMs: percentile(r.lateMs, 100),
          lateMinMs: Math.min(...r.lateMs)
        }),
        ...(r.statements === undefined ? {} : { statementsPerJob: r.statements / r.jobs })
      }
    }
    case "latency": {
      const r = await need(driver.latency, label)(spec.url, param(spec, "samples"))
      return {
        samples: r.samplesMs.length,
        p50Ms: percentile(r.samplesMs, 50),
        p99Ms: percentile(r.samplesMs, 99),
        meanMs: mean(r.samplesMs),
        maxMs: percentile(r.samplesMs, 100)
      }
    }
    case "crosslatency": {
      const startEnqueuer = () =>
        new Promise<void>((resolve, reject) => {
          const child = spawn(process.execPath, [process.argv[1]!, ENQUEUER_FLAG, JSON.stringify(spec)], {
            stdio: ["ignore", "inherit", "inherit"]
          })
          child.on("error", reject)
          child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`the enqueuer exited with ${code}`))))
        })
      const r = await need(driver.crossLatency, label)(spec.url, param(spec, "samples"), startEnqueuer)
      return {
        samples: r.samplesMs.length,
        p50Ms: percentile(r.samplesMs, 50),
        p99Ms: percentile(r.samplesMs, 99),
        meanMs: mean(r.samplesMs),
        maxMs: percentile(r.samplesMs, 100),
        idleStatementsPerSec: r.idleStatementsPerSec
      }
    }
    case "enqueue": {
      const r = await need(driver.enqueueBatch, label)(spec.url, param(spec, "jobs"))
      return { jobs: r.jobs, ms: r.ms, jobsPerSec: (r.jobs / r.ms) * 1000 }
    }
    case "steps": {
      const r = await need(driver.steps, label)(
        spec.url,
        param(spec, "jobs"),
        param(spec, "concurrency"),
        param(spec, "samples")
      )
      return { plainPerJob: r.plainPerJob, exclusivePerJob: r.exclusivePerJob, cyclePerJob: r.cyclePerJob }
    }
    case "roundtrips": {
      const n = param(spec, "jobs")
      const rt = need(driver.roundTrips, label)
      const plain = await rt(spec.url, n, false)
      const exclusive = await rt(spec.url, n, true)
      return {
        jobs: n,
        plainPerJob: plain.statements / plain.jobs,
        exclusivePerJob: exclusive.statements / exclusive.jobs
      }
    }
  }
}

// The other process of the cross-process latency scenario: enqueues, then exits.
const enqueuer = async (spec: ChildSpec) => {
  const driver = need(await loadDriver(spec.system), `system ${spec.system}`)
  await need(driver.enqueueTimed, `${spec.system} enqueuer`)(spec.url, param(spec, "samples"))
  process.exit(0)
}

const main = async () => {
  if (process.argv[2] === ENQUEUER_FLAG) return enqueuer(JSON.parse(process.argv[3]!) as ChildSpec)
  const raw = process.argv[2]
  if (raw === undefined) throw new Error("usage: bench/child.ts '<spec json>'")
  const spec = JSON.parse(raw) as ChildSpec
  let result: ChildResult
  try {
    const series: Record<string, ReadonlyArray<number>> = {}
    const metrics = await runSpec(spec, series)
    result = { status: "ok", metrics, ...(Object.keys(series).length === 0 ? {} : { series }) }
  } catch (e) {
    result = { status: "error", message: e instanceof Error ? (e.stack ?? e.message) : String(e) }
  }
  process.stdout.write(RESULT_PREFIX + JSON.stringify(result) + "\n")
  // Pools or timers a library left behind must not keep the run waiting.
  process.exit(0)
}

void main()
