/**
 * Architecture rules for leasehold's src/. Run with `npm run check:deps`.
 *
 * Layers, inner to outer: src/core ← src/ports ← src/adapters ← src/runtime ← src/cli.
 * A layer may import its own layer and the layers inside it, never one outside it.
 * Beside them, src/infra: small pieces of infrastructure (one-shot cells, the tracer check, the
 * Prometheus format, password masking) that import nothing of leasehold's and that adapters,
 * runtime, dashboard and cli may use; core and ports, pure, may not.
 * src/index.ts, src/testing.ts and the public modules src/JobStore.ts and src/LeaseLock.ts are the package's entry points: they may import any layer but cli.
 *
 * Only src/ is checked: test/, bench/, scripts/ and examples/ are exempt from every rule
 * (the script cruises src only, and they are excluded below in case someone cruises `.`).
 *
 * Type-only imports (`import type`, `import("…").T`) count for every rule: tsPreCompilationDeps is on.
 */

/**
 * Database driver packages (plus the @types packages of those that need one): only src/adapters/** may import them.
 * A resolved import lands in node_modules/<driver>/…; an unresolved one keeps its bare name (<driver> or <driver>/sub).
 */
const DRIVERS = ["pg", "mysql2", "better-sqlite3", "@effect/sql-pg", "@effect/sql-mysql2", "@effect/sql-sqlite-node"]
const DRIVER_TYPES = ["@types/pg", "@types/better-sqlite3"]
const drivers = DRIVERS.concat(DRIVER_TYPES).join("|")
const DRIVER_PATH = `(^|/)node_modules/(${drivers})/|^(${drivers})(/|$)`

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "core-imports-only-core",
      severity: "error",
      comment: "src/core is the innermost layer (pure domain rules): it may import only other src/core modules "
        + "(and packages), never src/ports, src/adapters, src/runtime, src/cli or the entry points "
        + "src/index.ts / src/testing.ts. Move the shared piece into src/core, or invert the dependency.",
      from: { path: "^src/core/" },
      to: { path: "^src/", pathNot: "^src/core/" }
    },
    {
      name: "ports-import-only-core",
      severity: "error",
      comment: "src/ports (the interfaces adapters implement) may import only src/core and other src/ports "
        + "modules, never src/adapters, src/runtime, src/cli or the entry points. A port must not know "
        + "its implementations.",
      from: { path: "^src/ports/" },
      to: { path: "^src/", pathNot: "^src/(core|ports)/" }
    },
    {
      name: "adapters-import-only-core-ports-adapters",
      severity: "error",
      comment: "src/adapters may import only src/core, src/ports and src/adapters, never src/runtime, src/cli "
        + "or the entry points. If an adapter needs something from the runtime, that thing belongs in "
        + "core or ports.",
      from: { path: "^src/adapters/" },
      to: { path: "^src/", pathNot: "^src/(core|ports|adapters|infra)/" }
    },
    {
      name: "runtime-imports-no-cli",
      severity: "error",
      comment: "src/runtime may import src/core, src/ports, src/adapters and src/runtime, never src/cli or the "
        + "entry points src/index.ts / src/testing.ts (the CLI is the outermost layer; entry points "
        + "re-export the runtime, so importing them from it would be circular).",
      from: { path: "^src/runtime/" },
      to: { path: "^src/", pathNot: "^src/(core|ports|adapters|runtime|infra)/" }
    },
    {
      name: "infra-imports-only-infra",
      severity: "error",
      comment: "src/infra holds infrastructure every outer layer may use (one-shot cells, the tracer "
        + "check, the Prometheus format, password masking): it imports nothing of leasehold's but "
        + "src/infra, so that it stays below every layer that uses it.",
      from: { path: "^src/infra/" },
      to: { path: "^src/", pathNot: "^src/infra/" }
    },
    {
      name: "entry-points-import-no-cli",
      severity: "error",
      comment: "src/index.ts, src/testing.ts, src/JobStore.ts and src/LeaseLock.ts are the package entry points: they may import any layer "
        + "except src/cli (the CLI is an application on top of the library, not part of its API).",
      from: { path: "^src/(index|testing|JobStore|LeaseLock|postgres|mysql|sqlite|dashboard)\\.ts$" },
      to: { path: "^src/cli/" }
    },
    {
      name: "dashboard-imports-no-cli",
      severity: "error",
      comment: "src/dashboard (the web dashboard, beside src/cli on top of the runtime) may import any layer "
        + "but src/cli: an app mounts it without the command line.",
      from: { path: "^src/dashboard/" },
      to: { path: "^src/cli/" }
    },
    {
      name: "no-circular",
      severity: "error",
      comment: "No import cycles anywhere under src/ (type-only imports included). A cycle makes module "
        + "initialisation order fragile and blurs which module owns what: extract the shared part into "
        + "a module both can import, or pass it in.",
      from: { path: "^src/" },
      to: { circular: true }
    },
    {
      name: "drivers-only-in-adapters",
      severity: "error",
      comment: "Database driver packages (pg, mysql2, better-sqlite3, @effect/sql-pg, @effect/sql-mysql2, "
        + "@effect/sql-sqlite-node) may be imported only from src/adapters/** (type-only and dynamic "
        + "import() included). Everything else talks to the database through the adapters' services, "
        + "so core/runtime stay driver-agnostic.",
      from: { path: "^src/", pathNot: "^src/adapters/" },
      to: { path: DRIVER_PATH }
    },
    {
      name: "no-unresolvable",
      severity: "error",
      comment: "Every import under src/ must resolve to a file or an installed package. Also guards the rules "
        + "above: an import that cannot be resolved would slip past the layer rules.",
      from: { path: "^src/" },
      to: { couldNotResolve: true }
    }
  ],
  options: {
    // Only src/ is under rules; the other trees are exempt.
    exclude: { path: "^(test|bench|scripts|examples)/" },
    // Record packages as leaves; don't cruise into them.
    doNotFollow: { path: "(^|/)node_modules/" },
    // Count `import type` / type-only specifiers too (they vanish after TS compilation otherwise).
    tsPreCompilationDeps: true,
    // Resolve the way tsc does (NodeNext, allowImportingTsExtensions): `./x.ts` imports resolve to the .ts file.
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      extensions: [".ts", ".d.ts", ".js", ".mjs", ".cjs", ".json"],
      mainFields: ["module", "main", "types", "typings"]
    },
    skipAnalysisNotInRules: true,
    reporterOptions: {
      text: { highlightFocused: true }
    }
  }
}
