/**
 * The benchmark's scenarios (the list, 1–7; 9, batch enqueue, from issue 14; 10, Effect steps; 3b, a rate limit), their sizes (full and `--quick`), the
 * systems each compares, how a median is shown, the ratios reported, and the targets a run must reach.
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import type { Backend } from "./lib/sql.ts"
import { countInWindow, maxInWindow } from "./lib/stats.ts"
import {
  PG_BOSS_BATCH_SIZE as BATCH_SIZE,
  PG_BOSS_POLLING_INTERVAL_SECONDS as POLLING_INTERVAL_SECONDS,
  type ScenarioId,
  type SystemId
} from "./protocol.ts"

const ROOT = join(import.meta.dirname, "..")

const versionOf = (pkg: string): string => {
  try {
    return String(JSON.parse(readFileSync(join(ROOT, "node_modules", pkg, "package.json"), "utf8")).version)
  } catch {
    return "?"
  }
}

export const PEER_VERSIONS = { "graphile-worker": versionOf("graphile-worker"), "pg-boss": versionOf("pg-boss") }

export interface SystemDef {
  readonly id: SystemId
  readonly label: string
  readonly backend: Backend
}

export const SYSTEMS: Readonly<Record<SystemId, SystemDef>> = {
  "leasehold-pg": { id: "leasehold-pg", label: "leasehold (PostgreSQL)", backend: "pg" },
  "leasehold-mariadb": { id: "leasehold-mariadb", label: "leasehold (MariaDB)", backend: "mariadb" },
  "leasehold-sqlite": { id: "leasehold-sqlite", label: "leasehold (SQLite)", backend: "sqlite" },
  "leasehold-galera-one": {
    id: "leasehold-galera-one",
    label: "leasehold (Galera, 3 nodes, all to one)",
    backend: "galera-one"
  },
  "leasehold-galera": { id: "leasehold-galera", label: "leasehold (Galera, 3 nodes, spread)", backend: "galera" },
  "graphile-worker": {
    id: "graphile-worker",
    label: `graphile-worker ${PEER_VERSIONS["graphile-worker"]}`,
    backend: "pg"
  },
  "pg-boss": { id: "pg-boss", label: `pg-boss ${PEER_VERSIONS["pg-boss"]}`, backend: "pg" },
  "raw-pg": { id: "raw-pg", label: "raw node-postgres, same 2 statements", backend: "pg" },
  "pg-advisory": { id: "pg-advisory", label: "pg_try_advisory_lock + pg_advisory_unlock", backend: "pg" }
}

export type Metrics = Readonly<Record<string, number>>

/** Medians of a system's metrics in a scenario, or why there are none. */
export type Outcome =
  | { readonly status: "ok"; readonly median: Metrics }
  | { readonly status: "error" }
  | { readonly status: "skipped" }

export type Lookup = (scenario: ScenarioId, system: SystemId) => Outcome | undefined

export interface RatioDef {
  readonly label: string
  /** Numerator and denominator: (scenario, system, metric). */
  readonly num: readonly [ScenarioId, SystemId, string]
  readonly den: readonly [ScenarioId, SystemId, string]
}

/** A figure a scenario must reach in every run, printed as pass or fail beside the run's figures. */
export interface TargetDef {
  readonly label: string
  readonly met: (m: Metrics) => boolean
  /** The figure checked, as printed beside pass or fail. */
  readonly figure: (m: Metrics) => string
}

/** Raw values a child sends with its figures (ChildResult's `series`), by name. */
export type Series = Readonly<Record<string, ReadonlyArray<number>>>

export interface ScenarioDef {
  readonly id: ScenarioId
  readonly num: string
  readonly title: (p: Metrics) => string
  readonly full: Metrics
  readonly quick: Metrics
  /** `extra`: run only with `--extras` (too slow, or beyond the list). */
  readonly systems: ReadonlyArray<{ readonly id: SystemId; readonly note?: string; readonly extra?: true }>
  /** The metric whose per-round values the table lists. */
  readonly primary: string
  /** The median shown in the table. */
  readonly show: (m: Metrics) => string
  readonly ratios: ReadonlyArray<RatioDef>
  /**
   * Figures the orchestrator computes from the child's `series` (the rate limit's sliding windows
   * over every start), merged into the run's metrics; a run without the series is an error.
   */
  readonly fromSeries?: (series: Series, p: Metrics) => Metrics
  /** What every run must reach (checked per run, on its own figures, not on medians). */
  readonly targets?: (p: Metrics) => ReadonlyArray<TargetDef>
}

const int = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString("en-US") : "–")
const ms = (x: number) => (!Number.isFinite(x) ? "–" : x >= 100 ? `${int(x)} ms` : `${x.toFixed(1)} ms`)
const num = (x: number, digits = 2) => (Number.isFinite(x) ? x.toFixed(digits) : "–")
const get = (m: Metrics, k: string) => m[k] ?? Number.NaN
const secs = (x: number) => (Number.isFinite(x) ? `${Number((x / 1000).toFixed(2))} s` : "–")
// CPU per job of a drain: the worker's Node process, and the database server's (bench/lib/cpu.ts).
const cpu = (m: Metrics) =>
  `CPU/job: Node ${int(get(m, "nodeCpuUsPerJob"))} µs` +
  (m.nodeMainCpuUsPerJob === undefined ? "" : ` (main thread ${int(get(m, "nodeMainCpuUsPerJob"))})`) +
  (m.dbCpuUsPerJob === undefined ? "" : `, server ${int(get(m, "dbCpuUsPerJob"))} µs`)

/** How a per-round value of a scenario's primary metric is printed. */
export const showPrimary = (scenario: ScenarioDef, x: number): string =>
  scenario.primary.endsWith("Ms") || scenario.primary === "ms"
    ? ms(x)
    : scenario.primary.endsWith("PerJob")
    ? num(x, 1)
    : int(x)

export const SCENARIOS: ReadonlyArray<ScenarioDef> = [
  {
    id: "throughput",
    num: "1",
    title: (p) => `Throughput: ${int(get(p, "jobs"))} pre-enqueued no-op jobs, concurrency ${get(p, "concurrency")}`,
    full: { jobs: 20_000, concurrency: 10 },
    quick: { jobs: 2_000, concurrency: 10 },
    systems: [
      { id: "leasehold-pg" },
      { id: "leasehold-mariadb" },
      { id: "leasehold-sqlite" },
      { id: "leasehold-galera-one", note: "scripts/galera/start; every statement to node 1", extra: true },
      { id: "leasehold-galera", note: "scripts/galera/start; statements round-robin over 3 nodes", extra: true },
      { id: "graphile-worker", note: "concurrency 10" },
      { id: "pg-boss", note: `10 workers, batch ${BATCH_SIZE}, poll ${POLLING_INTERVAL_SECONDS} s` }
    ],
    primary: "jobsPerSec",
    show: (m) => `${int(get(m, "jobsPerSec"))} jobs/s (${ms(get(m, "ms"))}); ${cpu(m)}`,
    ratios: [
      {
        label: "leasehold (PostgreSQL) ÷ graphile-worker, jobs/s",
        num: ["throughput", "leasehold-pg", "jobsPerSec"],
        den: ["throughput", "graphile-worker", "jobsPerSec"]
      },
      {
        label: "leasehold (PostgreSQL) ÷ graphile-worker, Node CPU µs per job",
        num: ["throughput", "leasehold-pg", "nodeCpuUsPerJob"],
        den: ["throughput", "graphile-worker", "nodeCpuUsPerJob"]
      },
      {
        label: "leasehold (PostgreSQL) ÷ graphile-worker, Node main-thread CPU µs per job",
        num: ["throughput", "leasehold-pg", "nodeMainCpuUsPerJob"],
        den: ["throughput", "graphile-worker", "nodeMainCpuUsPerJob"]
      },
      {
        label: "leasehold (PostgreSQL) ÷ graphile-worker, PostgreSQL CPU µs per job",
        num: ["throughput", "leasehold-pg", "dbCpuUsPerJob"],
        den: ["throughput", "graphile-worker", "dbCpuUsPerJob"]
      },
      {
        label: "leasehold (PostgreSQL) ÷ pg-boss, jobs/s",
        num: ["throughput", "leasehold-pg", "jobsPerSec"],
        den: ["throughput", "pg-boss", "jobsPerSec"]
      },
      {
        label: "pg-boss ÷ graphile-worker, jobs/s",
        num: ["throughput", "pg-boss", "jobsPerSec"],
        den: ["throughput", "graphile-worker", "jobsPerSec"]
      }
    ]
  },
  ...(
    [
      ["scale5k", "1b", "Throughput, a smaller queue", { jobs: 5_000, concurrency: 10 }, {
        jobs: 1_000,
        concurrency: 10
      }],
      ["scale100k", "1c", "Throughput, a larger queue", { jobs: 100_000, concurrency: 10 }, {
        jobs: 10_000,
        concurrency: 10
      }],
      ["bigtable", "1d", "Throughput beside 1,000,000 finished jobs kept in the table", {
        jobs: 20_000,
        concurrency: 10,
        finished: 1_000_000
      }, { jobs: 2_000, concurrency: 10, finished: 100_000 }],
      ["bigfuture", "1e", "Throughput beside 1,000,000 pending jobs due in a day", {
        jobs: 20_000,
        concurrency: 10,
        future: 1_000_000
      }, { jobs: 2_000, concurrency: 10, future: 100_000 }]
    ] as const
  ).map(([id, n, what, full, quick]): ScenarioDef => ({
    id,
    num: n,
    title: (p) => `${what}: ${int(get(p, "jobs"))} pre-enqueued no-op jobs, concurrency ${get(p, "concurrency")}`,
    full,
    quick,
    systems: [
      { id: "leasehold-pg" },
      {
        id: "graphile-worker",
        note: id === "bigtable" ? "finished = permanently failed (it deletes completed jobs)" : "concurrency 10"
      }
    ],
    primary: "jobsPerSec",
    show: (m) => `${int(get(m, "jobsPerSec"))} jobs/s (${ms(get(m, "ms"))}); ${cpu(m)}`,
    ratios: (["leasehold-pg", "graphile-worker"] as const).flatMap((system): ReadonlyArray<RatioDef> => [
      {
        label: `${SYSTEMS[system].label}: ${n} ÷ 1 (20,000 jobs, empty table), jobs/s`,
        num: [id, system, "jobsPerSec"],
        den: ["throughput", system, "jobsPerSec"]
      },
      ...(id === "scale100k"
        ? [{
          label: `${SYSTEMS[system].label}: 100,000 jobs ÷ 5,000 jobs, jobs/s`,
          num: ["scale100k", system, "jobsPerSec"] as const,
          den: ["scale5k", system, "jobsPerSec"] as const
        }]
        : [])
    ])
  })),
  {
    id: "exclusive",
    num: "2",
    title: (p) =>
      `Exclusive throughput: ${int(get(p, "jobs"))} jobs, a distinct concurrency key per job, concurrency ${
        get(p, "concurrency")
      }`,
    full: { jobs: 20_000, concurrency: 10 },
    quick: { jobs: 2_000, concurrency: 10 },
    systems: [
      { id: "leasehold-pg" },
      { id: "leasehold-mariadb" },
      { id: "leasehold-sqlite" },
      { id: "leasehold-galera-one", note: "scripts/galera/start; every statement to node 1", extra: true },
      { id: "leasehold-galera", note: "scripts/galera/start; statements round-robin over 3 nodes", extra: true },
      // get_job locks every available named queue up front, so one queue per job makes each
      // fetch O(queues): ~65 jobs/s at 2,000 jobs here, far worse at 20,000. Opt-in only.
      { id: "graphile-worker", note: "one named queue per job", extra: true }
    ],
    primary: "jobsPerSec",
    show: (m) => `${int(get(m, "jobsPerSec"))} jobs/s (${ms(get(m, "ms"))}); ${cpu(m)}`,
    ratios: [
      {
        label: "leasehold (PostgreSQL) exclusive ÷ plain, jobs/s",
        num: ["exclusive", "leasehold-pg", "jobsPerSec"],
        den: ["throughput", "leasehold-pg", "jobsPerSec"]
      },
      {
        label: "leasehold (PostgreSQL) ÷ graphile-worker (queue per job), jobs/s",
        num: ["exclusive", "leasehold-pg", "jobsPerSec"],
        den: ["exclusive", "graphile-worker", "jobsPerSec"]
      },
      {
        label: "graphile-worker queue per job ÷ plain, jobs/s",
        num: ["exclusive", "graphile-worker", "jobsPerSec"],
        den: ["throughput", "graphile-worker", "jobsPerSec"]
      }
    ]
  },
  {
    id: "hotkey",
    num: "3",
    title: (p) =>
      `Hot key: ${get(p, "jobs")} jobs on one key, each sleeping ${get(p, "sleepMs")} ms, ${
        get(p, "workers")
      } workers (ideal ${int(get(p, "jobs") * get(p, "sleepMs"))} ms)`,
    full: { jobs: 200, sleepMs: 5, workers: 4 },
    quick: { jobs: 50, sleepMs: 5, workers: 4 },
    systems: [
      { id: "leasehold-pg" },
      { id: "leasehold-mariadb" },
      { id: "leasehold-sqlite" },
      { id: "graphile-worker", note: "one named queue, concurrency 4" }
    ],
    primary: "ms",
    show: (m) =>
      `${ms(get(m, "ms"))} = ${num(get(m, "overIdeal"))} × ideal` +
      (m.statementsPerJob === undefined ? "" : `; ${num(get(m, "statementsPerJob"), 2)} statements/job`) +
      (m.startStatements === undefined ? "" : ` (+ ${int(get(m, "startStatements"))} at worker start)`),
    ratios: [
      {
        label: "leasehold (PostgreSQL) drain ÷ graphile-worker drain",
        num: ["hotkey", "leasehold-pg", "ms"],
        den: ["hotkey", "graphile-worker", "ms"]
      }
    ]
  },
  // 3b. A rate limit (docs/flow-control.md), leasehold's alone: graphile-worker has no rate limit,
  // and pg-boss's throttling keeps one job per period at send time and drops the rest.
  {
    id: "ratelimit",
    num: "3b",
    title: (p) =>
      `Rate limit: ${int(get(p, "jobs"))} no-op jobs due at once on one key limited to ${
        int(get(p, "limit"))
      } starts per ${secs(get(p, "periodMs"))}, one worker, concurrency ${
        get(p, "concurrency")
      } (leasehold only: graphile-worker has no rate limit)`,
    full: { jobs: 2_000, concurrency: 10, limit: 100, periodMs: 1_000, spanMs: 10_000, minInSpan: 950 },
    quick: { jobs: 600, concurrency: 10, limit: 100, periodMs: 1_000, spanMs: 5_000, minInSpan: 475 },
    systems: [{ id: "leasehold-pg" }, { id: "leasehold-mariadb" }, { id: "leasehold-sqlite" }],
    primary: "maxInWindow",
    show: (m) =>
      `at most ${int(get(m, "maxInWindow"))} starts in a ${secs(get(m, "periodMs"))} window, ${
        int(get(m, "inFirstSpan"))
      } in the first ${secs(get(m, "spanMs"))}; drain ${ms(get(m, "drainMs"))} (last start ${
        secs(get(m, "startSpanMs"))
      } after the first, ideal ${secs(get(m, "idealSpanMs"))}); ${num(get(m, "claimsPerJob"))} claims/job, ${
        num(get(m, "rateDeferralsPerJob"))
      } rate deferrals/job (at most ${int(get(m, "maxDeferralsOfOneJob"))} of one job); deferred jobs started ${
        ms(get(m, "lateP50Ms"))
      } (p50) / ${ms(get(m, "lateP99Ms"))} (p99) after their retryAt` +
      (m.statementsPerJob === undefined ? "" : `; ${num(get(m, "statementsPerJob"), 2)} statements/job`),
    ratios: [],
    fromSeries: (series, p) => {
      const starts = [...(series.startsMs ?? [])].sort((a, b) => a - b)
      const first = starts[0] ?? Number.NaN
      const limit = get(p, "limit")
      return {
        maxInWindow: maxInWindow(starts, get(p, "periodMs")),
        inFirstSpan: countInWindow(starts, first, get(p, "spanMs")),
        spanMs: get(p, "spanMs"),
        startSpanMs: (starts[starts.length - 1] ?? Number.NaN) - first,
        // `limit` starts at once, then `limit` more each period.
        idealSpanMs: (Math.ceil(starts.length / limit) - 1) * get(p, "periodMs")
      }
    },
    targets: (p) => [
      {
        label: `at most ${int(get(p, "limit"))} starts in every ${secs(get(p, "periodMs"))} window`,
        met: (m) => get(m, "maxInWindow") <= get(p, "limit"),
        figure: (m) => `most ${int(get(m, "maxInWindow"))}`
      },
      {
        label: `at least ${int(get(p, "minInSpan"))} starts in the first ${secs(get(p, "spanMs"))}`,
        met: (m) => get(m, "inFirstSpan") >= get(p, "minInSpan"),
        figure: (m) => `${int(get(m, "inFirstSpan"))}`
      }
    ]
  },
  {
    id: "latency",
    num: "4",
    title: (p) => `Latency: enqueue-to-start of single jobs on an idle worker, ${get(p, "samples")} jobs`,
    full: { samples: 200 },
    quick: { samples: 30 },
    systems: [
      { id: "leasehold-pg" },
      { id: "leasehold-mariadb" },
      { id: "leasehold-sqlite" },
      { id: "graphile-worker", note: "LISTEN/NOTIFY" }
    ],
    primary: "p50Ms",
    show: (m) => `p50 ${ms(get(m, "p50Ms"))}, p99 ${ms(get(m, "p99Ms"))}`,
    ratios: [
      {
        label: "leasehold (PostgreSQL) ÷ graphile-worker, p50",
        num: ["latency", "leasehold-pg", "p50Ms"],
        den: ["latency", "graphile-worker", "p50Ms"]
      },
      {
        label: "leasehold (PostgreSQL) ÷ graphile-worker, p99",
        num: ["latency", "leasehold-pg", "p99Ms"],
        den: ["latency", "graphile-worker", "p99Ms"]
      }
    ]
  },
  {
    id: "crosslatency",
    num: "4b",
    title: (p) =>
      `Latency across processes: ${
        get(p, "samples")
      } single jobs enqueued by another process to an idle worker at its default settings`,
    full: { samples: 100 },
    quick: { samples: 20 },
    systems: [
      { id: "leasehold-pg", note: "LISTEN/NOTIFY" },
      { id: "leasehold-mariadb", note: "idle probe every 200 ms" },
      { id: "leasehold-sqlite", note: "PRAGMA data_version every 25 ms" },
      { id: "graphile-worker", note: "LISTEN/NOTIFY" }
    ],
    primary: "p50Ms",
    show: (m) =>
      `p50 ${ms(get(m, "p50Ms"))}, p99 ${ms(get(m, "p99Ms"))}; idle: ${
        num(get(m, "idleStatementsPerSec"), 1)
      } statements/s`,
    ratios: [
      {
        label: "leasehold (PostgreSQL) ÷ graphile-worker, p50 across processes",
        num: ["crosslatency", "leasehold-pg", "p50Ms"],
        den: ["crosslatency", "graphile-worker", "p50Ms"]
      },
      {
        label: "leasehold (PostgreSQL) ÷ graphile-worker, p99 across processes",
        num: ["crosslatency", "leasehold-pg", "p99Ms"],
        den: ["crosslatency", "graphile-worker", "p99Ms"]
      }
    ]
  },
  {
    id: "leaselock",
    num: "5",
    title: (p) => `LeaseLock: ${int(get(p, "pairs"))} tryAcquire + release pairs, sequential, one connection`,
    full: { pairs: 5_000 },
    quick: { pairs: 500 },
    systems: [
      { id: "leasehold-pg" },
      { id: "raw-pg" },
      { id: "pg-advisory" },
      { id: "leasehold-mariadb" },
      { id: "leasehold-sqlite" }
    ],
    primary: "pairsPerSec",
    show: (m) => `${int(get(m, "pairsPerSec"))} pairs/s (${num(get(m, "statementsPerPair"), 1)} statements/pair)`,
    ratios: [
      {
        label: "leasehold (PostgreSQL) ÷ raw node-postgres, pairs/s",
        num: ["leaselock", "leasehold-pg", "pairsPerSec"],
        den: ["leaselock", "raw-pg", "pairsPerSec"]
      },
      {
        label: "leasehold (PostgreSQL) ÷ advisory locks, pairs/s",
        num: ["leaselock", "leasehold-pg", "pairsPerSec"],
        den: ["leaselock", "pg-advisory", "pairsPerSec"]
      },
      {
        label: "raw node-postgres ÷ advisory locks, pairs/s",
        num: ["leaselock", "raw-pg", "pairsPerSec"],
        den: ["leaselock", "pg-advisory", "pairsPerSec"]
      }
    ]
  },
  {
    id: "roundtrips",
    num: "6",
    title: (p) =>
      `Round trips: statements per completed job, counted through a wrapped SqlClient, ${int(get(p, "jobs"))} jobs`,
    full: { jobs: 1_000 },
    quick: { jobs: 200 },
    systems: [{ id: "leasehold-pg" }, { id: "leasehold-mariadb" }, { id: "leasehold-sqlite" }],
    primary: "plainPerJob",
    show: (m) => `plain ${num(get(m, "plainPerJob"), 1)}, exclusive ${num(get(m, "exclusivePerJob"), 1)}`,
    ratios: [
      {
        label: "leasehold (PostgreSQL) exclusive ÷ plain, statements/job",
        num: ["roundtrips", "leasehold-pg", "exclusivePerJob"],
        den: ["roundtrips", "leasehold-pg", "plainPerJob"]
      }
    ]
  },
  {
    id: "dashboard",
    num: "8",
    title: (p) =>
      `Dashboard: server time of the jobs page (first, 90% down by keyset, failed only) and the overview, ${
        int(get(p, "jobs"))
      } jobs, median of ${int(get(p, "requests"))}`,
    full: { jobs: 100_000, requests: 30 },
    quick: { jobs: 10_000, requests: 10 },
    systems: [{ id: "leasehold-pg" }, { id: "leasehold-mariadb" }, { id: "leasehold-sqlite" }],
    primary: "firstMs",
    show: (m) =>
      `jobs page ${num(get(m, "firstMs"), 1)} ms, 90% down ${num(get(m, "deepMs"), 1)} ms, failed ${
        num(get(m, "failedMs"), 1)
      } ms, overview ${num(get(m, "overviewMs"), 1)} ms`,
    ratios: [
      {
        label: "leasehold (PostgreSQL) jobs page 90% down ÷ first page, server ms",
        num: ["dashboard", "leasehold-pg", "deepMs"],
        den: ["dashboard", "leasehold-pg", "firstMs"]
      }
    ]
  },
  // 9. Batch enqueue (issue 14).
  {
    id: "enqueue",
    num: "9",
    title: (p) => `Batch enqueue: ${int(get(p, "jobs"))} jobs in one call from the client, into empty tables`,
    full: { jobs: 20_000 },
    quick: { jobs: 2_000 },
    systems: [
      { id: "leasehold-pg", note: "Job.enqueueMany: one transaction, 1,000 rows per INSERT" },
      { id: "leasehold-mariadb" },
      { id: "leasehold-sqlite" },
      { id: "graphile-worker", note: "add_jobs(json_populate_recordset(…)), one statement, as its addJobs" },
      { id: "pg-boss", note: "boss.insert" }
    ],
    primary: "jobsPerSec",
    show: (m) => `${int(get(m, "jobsPerSec"))} jobs/s (${ms(get(m, "ms"))})`,
    ratios: [
      {
        label: "leasehold (PostgreSQL) ÷ graphile-worker, enqueued jobs/s",
        num: ["enqueue", "leasehold-pg", "jobsPerSec"],
        den: ["enqueue", "graphile-worker", "jobsPerSec"]
      },
      {
        label: "leasehold (PostgreSQL) ÷ pg-boss, enqueued jobs/s",
        num: ["enqueue", "leasehold-pg", "jobsPerSec"],
        den: ["enqueue", "pg-boss", "jobsPerSec"]
      }
    ]
  },
  // 10. The Effect runtime's steps (issue 13): a count, the same run after run, where CPU time
  // on a shared machine varies by a tenth.
  {
    id: "steps",
    num: "10",
    title: (p) =>
      `Effect steps: the runtime's steps per job of scenario 1's and 2's drains (${
        int(get(p, "jobs"))
      } jobs, concurrency ${get(p, "concurrency")}) and per cycle of scenario 4 (an enqueue to its outcome written, ${
        int(get(p, "samples"))
      } cycles), counted by a Supervisor on every step`,
    full: { jobs: 5_000, concurrency: 10, samples: 100 },
    quick: { jobs: 500, concurrency: 10, samples: 20 },
    systems: [{ id: "leasehold-pg" }, { id: "leasehold-mariadb" }, { id: "leasehold-sqlite" }],
    primary: "plainPerJob",
    show: (m) =>
      `plain ${num(get(m, "plainPerJob"), 1)}, exclusive ${num(get(m, "exclusivePerJob"), 1)}, enqueue to outcome ${
        num(get(m, "cyclePerJob"), 1)
      } steps/job`,
    ratios: [
      {
        label: "leasehold (PostgreSQL) exclusive ÷ plain, Effect steps/job",
        num: ["steps", "leasehold-pg", "exclusivePerJob"],
        den: ["steps", "leasehold-pg", "plainPerJob"]
      }
    ]
  }
]

/** Scenario 7 is measured in scenario 1's child processes; these are its ratios. */
export const MEMORY_RATIOS: ReadonlyArray<RatioDef> = [
  {
    label: "leasehold (PostgreSQL) ÷ graphile-worker, peak RSS",
    num: ["throughput", "leasehold-pg", "peakRssMb"],
    den: ["throughput", "graphile-worker", "peakRssMb"]
  },
  {
    label: "leasehold (PostgreSQL) ÷ pg-boss, peak RSS",
    num: ["throughput", "leasehold-pg", "peakRssMb"],
    den: ["throughput", "pg-boss", "peakRssMb"]
  }
]

/** A ratio's value, or "n/a" when it has none (a side without a median or the metric, or a zero denominator). */
export const ratioValue = (r: RatioDef, lookup: Lookup): number | "n/a" => {
  const a = lookup(r.num[0], r.num[1])
  const b = lookup(r.den[0], r.den[1])
  if (a?.status !== "ok" || b?.status !== "ok") return "n/a"
  const x = a.median[r.num[2]]
  const y = b.median[r.den[2]]
  return x === undefined || y === undefined || y === 0 ? "n/a" : x / y
}
