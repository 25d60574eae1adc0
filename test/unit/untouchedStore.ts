/**
 * A store that no check may touch: the JobStore, JobLeases and ScheduleStore services as proxies whose every
 * operation records the call and dies. The store-free checks in this folder run
 * against it, so each shows both the typed error and that it came before any store call — on
 * every adapter alike, since no adapter code is reached.
 */
import { Effect, Layer, Option } from "effect"
import { JobLeases, JobStore } from "../../src/JobStore.ts"
import { ScheduleStore } from "../../src/ports/ScheduleStore.ts"
import { type AnyJobType, Jobs, jobsLayer } from "../../src/runtime/Job.ts"

/** Store members that are effects rather than functions (JobStoreApi, LeaseLockApi). */
const effectMembers = new Set(["counts", "listHosts", "ensureTable", "tableExists", "list", "limits"])

/** Store members that are plain values, read when a worker starts: what they hold is no store call. */
const valueMembers: Readonly<Record<string, unknown>> = { idleProbe: Option.none(), remote: true }

const untouchable = <S extends object>(label: string, touched: Array<string>): S =>
  new Proxy({} as S, {
    get: (_target, key) => {
      // Symbols and `then` are how runtimes probe any value (equality, promises): not a store call.
      if (typeof key !== "string" || key === "then") return undefined
      if (key in valueMembers) return valueMembers[key]
      // Reading a member is not a call (`store.drain(host, now, yield* check)` reads `drain`
      // before it runs the check); running it is, and dies.
      const touch = () => {
        touched.push(`${label}.${key}`)
        return Effect.dieMessage(`${label}.${key} was called: this check must fail before any store call`)
      }
      return effectMembers.has(key) ? Effect.suspend(touch) : touch
    }
  })

/** What `untouchedStore` provides: the worker services and the list of store members touched. */
export interface UntouchedStore {
  /** `Service.member` for every store operation run so far; it must stay empty. */
  readonly touched: ReadonlyArray<string>
  /** JobStore and JobLeases that must not be touched, and a registry of `types`. */
  readonly layer: Layer.Layer<JobStore | JobLeases | ScheduleStore | Jobs>
}

/** A store that must not be touched, with a registry of `types` (the registry is in memory). */
export const untouchedStore = (types: ReadonlyArray<AnyJobType> = []): UntouchedStore => {
  const touched: Array<string> = []
  return {
    touched,
    layer: Layer.mergeAll(
      Layer.succeed(JobStore, untouchable<JobStore["Type"]>("JobStore", touched)),
      Layer.succeed(JobLeases, untouchable<JobLeases["Type"]>("JobLeases", touched)),
      Layer.succeed(ScheduleStore, untouchable<ScheduleStore["Type"]>("ScheduleStore", touched)),
      // the test types need nothing beyond JobContext
      jobsLayer(...types) as Layer.Layer<Jobs>
    )
  }
}

/**
 * Runs `effect` with an untouched store of `types`, then checks that no store operation ran:
 * fails the test (dies) if one did, even when `effect` caught the defect.
 */
export const withUntouchedStore = <A, E, R>(types: ReadonlyArray<AnyJobType>, effect: Effect.Effect<A, E, R>) => {
  const store = untouchedStore(types)
  return Effect.provide(effect, store.layer).pipe(
    Effect.tap(() =>
      store.touched.length === 0 ? Effect.void : Effect.dieMessage(`store touched: ${store.touched.join(", ")}`)
    )
  )
}
