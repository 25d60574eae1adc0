/**
 * `npm run bench`: leasehold against graphile-worker and pg-boss on the local PostgreSQL, and
 * leasehold's own figures on MariaDB and SQLite (scenarios in `bench/scenarios.ts`).
 *
 * Every (round, scenario, system) runs in a child process of its own (`bench/child.ts`), on a
 * database created for it (`lh_bench_<system>_<scenario>_r<round>`, or a temporary SQLite
 * file) and dropped right after, so peak RSS is per system and no run sees another's data.
 * Rounds alternate the order of the systems. Medians over the rounds and the ratios between
 * them are printed and written to bench/results.json and bench/results.md (a `--quick` smoke
 * run writes bench/results/quick.{json,md} instead, and leaves the full results alone).
 *
 * Flags: --quick, --rounds N (or BENCH_ROUNDS; default 3), --only <scenario,…>, --out NAME
 * (write bench/results/NAME.{json,md} instead: for a partial run such as the Galera rows),
 * --systems <system,…>, --timeout <seconds per child> (or BENCH_TIMEOUT_S), --extras (also the
 * optional comparisons marked `extra` in bench/scenarios.ts, e.g. graphile-worker with one named
 * queue per job in scenario 2, which is very slow at full size).
 * Env: BENCH_PG_URL, BENCH_MYSQL_URL (admin connections; defaults: local postgres / root).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { cpus, loadavg, release, totalmem, type as osType } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { type BenchDatabase, createDatabase, serverVersions } from "./lib/databases.ts"
import { median } from "./lib/stats.ts"
import { type ChildResult, type ChildSpec, RESULT_PREFIX, type ScenarioId, type SystemId } from "./protocol.ts"
import {
  MEMORY_RATIOS,
  type Metrics,
  type Outcome,
  PEER_VERSIONS,
  type RatioDef,
  ratioValue,
  SCENARIOS,
  type ScenarioDef,
  showPrimary,
  SYSTEMS
} from "./scenarios.ts"

const ROOT = join(import.meta.dirname, "..")
const CHILD_SOURCE = join(import.meta.dirname, "child.ts")
const BUILD = join(import.meta.dirname, ".build")
const CHILD = join(BUILD, "child.js")

// ---------------------------------------------------------------------------------------------
// Options

const { values: flags } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    rounds: { type: "string" },
    only: { type: "string" },
    systems: { type: "string" },
    timeout: { type: "string" },
    extras: { type: "boolean", default: false },
    out: { type: "string" },
    help: { type: "boolean", default: false }
  },
  strict: true
})

if (flags.help) {
  console.log(`usage: npm run bench -- [--quick] [--rounds N] [--only ${SCENARIOS.map((s) => s.id).join(",")}]
                       [--systems ${Object.keys(SYSTEMS).join(",")}] [--timeout SECONDS] [--extras] [--out NAME]`)
  process.exit(0)
}

const positiveInt = (raw: string | undefined, what: string, fallback: number): number => {
  if (raw === undefined || raw === "") return fallback
  const n = Number(raw)
  if (!Number.isSafeInteger(n) || n < 1) {
    console.error(`${what} must be a positive whole number, got ${JSON.stringify(raw)}`)
    process.exit(2)
  }
  return n
}

const quick = flags.quick ?? false
const rounds = positiveInt(flags.rounds ?? process.env.BENCH_ROUNDS, "--rounds", 3)
// A quick run, or a partial one named with --out, goes under bench/results/ and leaves the full results alone.
const outName = flags.out === undefined ? undefined : /^[a-z0-9-]+$/.test(flags.out) ? flags.out : undefined
if (flags.out !== undefined && outName === undefined) {
  console.error(`--out must be lower-case letters, digits and -, got ${JSON.stringify(flags.out)}`)
  process.exit(2)
}
const timeoutMs = positiveInt(flags.timeout ?? process.env.BENCH_TIMEOUT_S, "--timeout", quick ? 120 : 600) * 1000
const listFlag = (raw: string | undefined, known: ReadonlyArray<string>, what: string): Set<string> | undefined => {
  if (raw === undefined) return undefined
  const items = raw.split(",").map((s) => s.trim()).filter((s) => s !== "")
  const unknown = items.filter((s) => !known.includes(s))
  if (unknown.length > 0) {
    console.error(`unknown ${what}: ${unknown.join(", ")} (known: ${known.join(", ")})`)
    process.exit(2)
  }
  return new Set(items)
}
const onlyScenarios = listFlag(flags.only, SCENARIOS.map((s) => s.id), "scenario")
const onlySystems = listFlag(flags.systems, Object.keys(SYSTEMS), "system")

const plan = SCENARIOS.filter((s) => onlyScenarios === undefined || onlyScenarios.has(s.id)).map((s) => ({
  scenario: s,
  params: quick ? s.quick : s.full,
  systems: s.systems.filter((x) =>
    (onlySystems === undefined || onlySystems.has(x.id)) && (x.extra !== true || flags.extras === true)
  )
})).filter((p) => p.systems.length > 0)

if (!quick && rounds < 3) console.error(`note: ${rounds} round(s); the published figures use at least 3`)

// ---------------------------------------------------------------------------------------------
// Child processes and their databases

let current: { child?: ChildProcess; db?: BenchDatabase } = {}

// Every child runs compiled JavaScript on plain node, leasehold and its competitors alike: a
// TypeScript loader in the child (tsx) would cost 70–110 MiB of its peak RSS (issue 13). The
// child and the code it imports from this repository are bundled by esbuild (which tsx brings);
// packages stay in node_modules, loaded as they would be by an app.
const { build } = await import("esbuild")
await build({
  entryPoints: [CHILD_SOURCE],
  outdir: BUILD,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  packages: "external",
  sourcemap: "inline",
  logLevel: "warning"
})

const runChild = (spec: ChildSpec): Promise<ChildResult> =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, ["--expose-gc", "--enable-source-maps", CHILD, JSON.stringify(spec)], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"]
    })
    current.child = child
    let result: ChildResult | undefined
    let stdout = ""
    let stderrTail = ""
    const tag = `  [${spec.system} ${spec.scenario}]`
    const timer = setTimeout(() => {
      result ??= { status: "error", message: `timed out after ${timeoutMs / 1000} s` }
      child.kill("SIGKILL")
    }, timeoutMs)
    child.stdout.setEncoding("utf8")
    child.stdout.on("data", (chunk: string) => {
      stdout += chunk
      let nl = stdout.indexOf("\n")
      while (nl >= 0) {
        const line = stdout.slice(0, nl)
        stdout = stdout.slice(nl + 1)
        if (line.startsWith(RESULT_PREFIX)) result ??= JSON.parse(line.slice(RESULT_PREFIX.length)) as ChildResult
        else if (line.trim() !== "") process.stderr.write(`${tag} ${line}\n`)
        nl = stdout.indexOf("\n")
      }
    })
    child.stderr.setEncoding("utf8")
    child.stderr.on("data", (chunk: string) => {
      stderrTail = (stderrTail + chunk).slice(-4000)
      for (const line of chunk.split("\n")) if (line.trim() !== "") process.stderr.write(`${tag} ${line}\n`)
    })
    child.on("close", (code, signal) => {
      clearTimeout(timer)
      current.child = undefined
      resolve(
        result ??
          { status: "error", message: `child exited (${code ?? signal}) without a result: ${stderrTail.trim()}` }
      )
    })
  })

const dbName = (system: SystemId, scenario: ScenarioId, round: number) =>
  `lh_bench_${system.replace(/-/g, "_")}_${scenario}_r${round}`

let interrupted = false
process.on("SIGINT", () => {
  if (interrupted) return
  interrupted = true
  console.error("\ninterrupted: stopping the current run and dropping its database")
  current.child?.kill("SIGKILL")
  const drop = current.db?.drop() ?? Promise.resolve()
  void drop.finally(() => process.exit(130))
})

// ---------------------------------------------------------------------------------------------
// Rounds

interface Run {
  readonly round: number
  readonly result: ChildResult
}

const runs = new Map<string, Array<Run>>()
const key = (scenario: ScenarioId, system: SystemId) => `${scenario}/${system}`

/** A run's targets (bench/scenarios.ts `targets`), each met or not on the run's own figures. */
const targetsOf = (scenario: ScenarioDef, params: Metrics, metrics: Metrics) =>
  (scenario.targets?.(params) ?? []).map((t) => ({ label: t.label, met: t.met(metrics), figure: t.figure(metrics) }))

const describe = (scenario: ScenarioDef, params: Metrics, r: ChildResult): string => {
  switch (r.status) {
    case "ok":
      return scenario.show(r.metrics) +
        (r.metrics.peakRssMb === undefined ? "" : `, peak RSS ${Math.round(r.metrics.peakRssMb)} MiB`) +
        targetsOf(scenario, params, r.metrics).map((t) =>
          `\n      target ${t.label}: ${t.met ? "pass" : "FAIL"} (${t.figure})`
        ).join("")
    case "error":
      return `ERROR ${r.message.split("\n")[0]}`
  }
}

/**
 * A child's result with the figures the scenario computes from its series merged into its
 * metrics (the series themselves are not kept).
 */
const summarised = (scenario: ScenarioDef, params: Metrics, r: ChildResult): ChildResult => {
  if (r.status !== "ok" || scenario.fromSeries === undefined) return r
  if (r.series === undefined) return { status: "error", message: "the child sent no series to summarise" }
  return { status: "ok", metrics: { ...r.metrics, ...scenario.fromSeries(r.series, params) } }
}

const started = new Date()
const t0 = performance.now()
const loadAtStart = loadavg()[0] ?? Number.NaN
const versions = await serverVersions()

console.error(
  `leasehold bench: ${quick ? "quick" : "full"} mode, ${rounds} round(s), scenarios ${
    plan.map((p) => p.scenario.id).join(", ")
  }`
)
for (let round = 1; round <= rounds && !interrupted; round++) {
  console.error(`round ${round}/${rounds}`)
  for (const { scenario, params, systems } of plan) {
    // Alternate: each round starts one system further along.
    const order = systems.map((_, i) => systems[(i + round - 1) % systems.length]!)
    for (const { id: system } of order) {
      if (interrupted) break
      const k = key(scenario.id, system)
      const name = dbName(system, scenario.id, round)
      let result: ChildResult
      const began = performance.now()
      try {
        current.db = await createDatabase(SYSTEMS[system].backend, name)
        result = summarised(
          scenario,
          params,
          await runChild({ scenario: scenario.id, system, url: current.db.url, params })
        )
      } catch (e) {
        result = { status: "error", message: `could not create ${name}: ${e instanceof Error ? e.message : String(e)}` }
      } finally {
        if (current.db !== undefined && !interrupted) {
          await current.db.drop().catch((e) => console.error(`  could not drop ${name}: ${String(e)}`))
          current.db = undefined
        }
      }
      if (interrupted) break
      const list = runs.get(k) ?? []
      list.push({ round, result })
      runs.set(k, list)
      const secs = ((performance.now() - began) / 1000).toFixed(1)
      console.error(
        `  ${scenario.num}. ${scenario.id.padEnd(10)} ${SYSTEMS[system].label.padEnd(40)} ${
          describe(scenario, params, result)
        } [${secs} s]`
      )
    }
  }
}
if (interrupted) await new Promise(() => {}) // the SIGINT handler exits

// ---------------------------------------------------------------------------------------------
// Summary

const outcome = (scenario: ScenarioId, system: SystemId): Outcome | undefined => {
  const list = runs.get(key(scenario, system))
  if (list === undefined) return undefined
  const ok = list.flatMap((r) => (r.result.status === "ok" ? [r.result.metrics] : []))
  if (ok.length > 0) {
    const names = [...new Set(ok.flatMap((m) => Object.keys(m)))]
    const med: Record<string, number> = {}
    for (const n of names) med[n] = median(ok.flatMap((m) => (m[n] === undefined ? [] : [m[n]])))
    return { status: "ok", median: med }
  }
  return { status: "error" }
}

const planned = new Set(plan.flatMap((p) => p.systems.map((x) => key(p.scenario.id, x.id))))
const ratioRows = (defs: ReadonlyArray<RatioDef>) =>
  defs.filter((r) => planned.has(key(r.num[0], r.num[1])) && planned.has(key(r.den[0], r.den[1]))).map((r) => {
    const v = ratioValue(r, outcome)
    return { label: r.label, value: typeof v === "number" ? Number(v.toFixed(3)) : v }
  })

const durationS = (performance.now() - t0) / 1000
const cpuList = cpus()
const machine = {
  cpu: `${cpuList[0]?.model.trim() ?? "?"} × ${cpuList.length}`,
  memoryGiB: Number((totalmem() / 2 ** 30).toFixed(1)),
  os: `${osType()} ${release()}`,
  node: process.version,
  loadAverage1m: { start: Number(loadAtStart.toFixed(2)), end: Number((loadavg()[0] ?? Number.NaN).toFixed(2)) },
  databases: versions,
  peers: PEER_VERSIONS
}

const resultsJson = {
  started: started.toISOString(),
  durationS: Number(durationS.toFixed(1)),
  mode: quick ? "quick" : "full",
  rounds,
  machine,
  scenarios: plan.map(({ scenario, params, systems }) => ({
    id: scenario.id,
    number: scenario.num,
    title: scenario.title(params),
    params,
    systems: systems.map(({ id, note }) => {
      const o = outcome(scenario.id, id)
      return {
        system: id,
        label: SYSTEMS[id].label,
        note: note ?? null,
        status: o?.status ?? "skipped",
        median: o?.status === "ok" ? o.median : null,
        runs: (runs.get(key(scenario.id, id)) ?? []).map((r) => ({
          round: r.round,
          status: r.result.status,
          ...(r.result.status === "ok" ? { metrics: r.result.metrics } : {}),
          ...(r.result.status === "ok" && scenario.targets !== undefined
            ? { targets: targetsOf(scenario, params, r.result.metrics) }
            : {}),
          ...(r.result.status === "error" ? { error: r.result.message.split("\n")[0] } : {})
        }))
      }
    }),
    ratios: ratioRows(scenario.ratios)
  })),
  memory: plan.some((p) => p.scenario.id === "throughput")
    ? {
      note:
        "peak RSS of the worker's child process during the timed drain of scenario 1 (VmHWM reset after enqueueing)",
      systems: (plan.find((p) => p.scenario.id === "throughput")?.systems ?? []).map(({ id }) => {
        const o = outcome("throughput", id)
        return {
          system: id,
          status: o?.status ?? "skipped",
          peakRssMb: o?.status === "ok" ? o.median.peakRssMb ?? null : null
        }
      }),
      ratios: ratioRows(MEMORY_RATIOS)
    }
    : null
}

// Markdown

const cell = (s: string) => s.replace(/\|/g, "\\|")
const statusText = (o: Outcome | undefined) => o === undefined ? "not run" : o.status
const fmtRatio = (v: number | string) => (typeof v === "number" ? `${v.toFixed(2)}×` : v)

const tableRows: Array<string> = []
for (const { scenario, params, systems } of plan) {
  systems.forEach(({ id, note }, i) => {
    const o = outcome(scenario.id, id)
    const list = runs.get(key(scenario.id, id)) ?? []
    const perRound = list.map((r) =>
      r.result.status === "ok"
        ? showPrimary(scenario, r.result.metrics[scenario.primary] ?? Number.NaN)
        : r.result.status
    )
    const system = note === undefined ? SYSTEMS[id].label : `${SYSTEMS[id].label} (${note})`
    tableRows.push(
      `| ${i === 0 ? scenario.num : ""} | ${i === 0 ? cell(scenario.title(params)) : ""} | ${cell(system)} | ${
        o?.status === "ok" ? cell(scenario.show(o.median)) : statusText(o)
      } | ${o?.status === "ok" ? perRound.join(" · ") : ""} |`
    )
  })
}
if (resultsJson.memory !== null) {
  resultsJson.memory.systems.forEach((m, i) => {
    const o = outcome("throughput", m.system)
    const list = runs.get(key("throughput", m.system)) ?? []
    const perRound = list.map((
      r
    ) => (r.result.status === "ok" ? `${Math.round(r.result.metrics.peakRssMb ?? Number.NaN)}` : r.result.status))
    tableRows.push(
      `| ${i === 0 ? "7" : ""} | ${
        i === 0 ? "Memory: peak RSS of the worker process during the scenario 1 drain" : ""
      } | ${cell(SYSTEMS[m.system].label)} | ${
        m.peakRssMb === null ? statusText(o) : `${Math.round(m.peakRssMb)} MiB`
      } | ${o?.status === "ok" ? perRound.join(" · ") : ""} |`
    )
  })
}

// Targets, per run: pass or fail on that run's own figures.
const targetRows = plan.flatMap(({ scenario, params, systems }) =>
  (scenario.targets?.(params) ?? []).flatMap((target, t) =>
    systems.map(({ id }, i) => {
      const perRound = (runs.get(key(scenario.id, id)) ?? []).map((r) => {
        if (r.result.status !== "ok") return r.result.status
        const checked = targetsOf(scenario, params, r.result.metrics)[t]!
        return `${checked.met ? "pass" : "FAIL"} (${checked.figure})`
      })
      return `| ${i === 0 && t === 0 ? scenario.num : ""} | ${i === 0 ? cell(target.label) : ""} | ${
        cell(SYSTEMS[id].label)
      } | ${perRound.length === 0 ? "not run" : perRound.join(" · ")} |`
    })
  )
)

const ratioTable = [
  ...resultsJson.scenarios.flatMap((s) =>
    s.ratios.map((r) => `| ${s.number} | ${cell(r.label)} | ${fmtRatio(r.value)} |`)
  ),
  ...(resultsJson.memory?.ratios ?? []).map((r) => `| 7 | ${cell(r.label)} | ${fmtRatio(r.value)} |`)
]

const machineLine = `${machine.cpu}, ${machine.memoryGiB} GiB RAM, ${machine.os}, Node ${machine.node}; ` +
  `${versions.pg}, ${versions.mariadb}, ${versions.sqlite}`

const markdown = [
  `## leasehold benchmark${quick ? " (quick smoke run: small counts, not for quoting)" : ""}`,
  "",
  `Machine: ${machineLine}.`,
  `Run: ${started.toISOString()}, ${rounds} round(s), systems alternated each round, each system in its own process on a fresh database; ` +
  `medians over the rounds; total ${
    Math.round(durationS)
  } s; 1-minute load average ${machine.loadAverage1m.start} at the start, ${machine.loadAverage1m.end} at the end.`,
  "",
  "| # | Scenario | System | Median | Per round |",
  "|---|---|---|---|---|",
  ...tableRows,
  "",
  ...(targetRows.length === 0
    ? []
    : ["| # | Target (every run) | System | Per round |", "|---|---|---|---|", ...targetRows, ""]),
  "| # | Ratio (of medians) | Value |",
  "|---|---|---|",
  ...ratioTable,
  "",
  "Notes: drains are timed from worker start to the last job completed in the database, jobs enqueued beforehand in one statement; " +
  "the hot-key drain from the first job's start to the last job's completion. " +
  "leasehold's statements (hot key, idle statements across processes) are counted through a wrapped SqlClient in a run of their own, not the timed one: the wrapper takes a pooled connection per statement, which the other systems' timed runs do not pay. " +
  "pg-boss 10 waits its polling interval after every fetch, full or not, so 10 workers × batch 50 at its minimum 0.5 s interval cap it at 1,000 jobs/s. " +
  (planned.has(key("exclusive", "graphile-worker"))
    ? "graphile-worker's exclusive equivalent is one named (serial) queue per job. "
    : "") +
  (plan.some((p) => p.scenario.id === "ratelimit")
    ? "The rate limit (3b) is leasehold's alone: graphile-worker has no rate limit, and pg-boss's throttling keeps one job per period at send time and drops the rest; " +
      "each perform's start is Date.now() as it begins, windows [t, t + period) are slid over every start, the drain is timed from worker start to the last completion at the worker's default poll interval, " +
      "and its statements are counted in a second drain over the counting client. "
    : "") +
  "Latency is measured in one process from just before the enqueue call to the start of the job's handler. " +
  "LeaseLock pairs use a distinct lease name per pair; the raw node-postgres row sends the statements leasehold builds (INSERT … ON CONFLICT DO UPDATE … WHERE expired RETURNING, DELETE). " +
  "Round trips are counted with a single worker fiber, so no two claims or completions can share a statement (group commit needs concurrent fibers).",
  ""
].join("\n")

const outDir = quick || outName !== undefined ? join(import.meta.dirname, "results") : import.meta.dirname
const base = outName ?? (quick ? "quick" : "results")
mkdirSync(outDir, { recursive: true })
writeFileSync(join(outDir, `${base}.json`), JSON.stringify(resultsJson, null, 2) + "\n")
// Sections measured by other scripts (the CLI start time: scripts/cli-start-time.mjs) are kept.
const keptSections = (() => {
  const file = join(outDir, `${base}.md`)
  const previous = existsSync(file) ? readFileSync(file, "utf8") : ""
  const at = previous.indexOf("\n## CLI start time")
  return at === -1 ? "" : previous.slice(at)
})()
writeFileSync(join(outDir, `${base}.md`), markdown + keptSections)
console.log(markdown)
console.error(`wrote ${join(outDir, `${base}.json`)} and ${join(outDir, `${base}.md`)} (${Math.round(durationS)} s)`)
