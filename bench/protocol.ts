/** What the orchestrator (`bench/run.ts`) and a child (`bench/child.ts`) pass each other. */

export type ScenarioId = "throughput" | "exclusive" | "hotkey" | "latency" | "leaselock" | "roundtrips"
export type SystemId =
  | "leasehold-pg"
  | "leasehold-mariadb"
  | "leasehold-sqlite"
  | "graphile-worker"
  | "pg-boss"
  | "raw-pg"
  | "pg-advisory"

export interface ChildSpec {
  readonly scenario: ScenarioId
  readonly system: SystemId
  readonly url: string
  readonly params: Readonly<Record<string, number>>
}

export type ChildResult =
  | { readonly status: "ok"; readonly metrics: Readonly<Record<string, number>> }
  | { readonly status: "pending" }
  | { readonly status: "error"; readonly message: string }

export const RESULT_PREFIX = "@@BENCH_RESULT "
