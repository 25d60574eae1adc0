/**
 * The registry (docs/behaviour.md §7): which job types a worker can run, by name, each with its
 * perform's requirements already provided.
 */
import { Context, Effect, FiberRef, Layer, Option } from "effect"
import { JobDefinitionError } from "../../core/errors.ts"
import { setInPlace } from "../inPlace.ts"
import { JobContext, type JobContextApi } from "./context.ts"
import type { AnyJobType, JobType } from "./define.ts"

/** A registered job type, its requirements already provided. */
export interface RegisteredJob {
  readonly type: AnyJobType
  readonly perform: (payload: unknown) => Effect.Effect<void, unknown, JobContext>
  /**
   * `perform` with its `JobContext` as well, both set at once as the context of the fiber it runs
   * in, which is not restored afterwards: it must be the last thing its fiber does (perform's own
   * fiber, src/runtime/worker/perform.ts). A scoped provision is an acquire/release, two context
   * copies and two FiberRef writes per attempt. Optional, so a registry of the app's own still
   * works: without it, the worker sets the context itself.
   */
  readonly run?: (payload: unknown, job: JobContextApi) => Effect.Effect<void, unknown>
}

/** The registry: which job types this worker can run. */
export interface JobsApi {
  readonly get: (name: string) => Option.Option<RegisteredJob>
  readonly names: ReadonlyArray<string>
}

/** The job-type registry service. */
export class Jobs extends Context.Tag("leasehold/Jobs")<Jobs, JobsApi>() {}

type Requirements<T> = T extends JobType<string, any, any, infer R> ? R : never

/**
 * A registry of these job types. Their perform functions' requirements (other than
 * `JobContext`) are taken from the layer's context once, when the layer is built.
 */
export const jobsLayer = <const Types extends ReadonlyArray<AnyJobType>>(
  ...types: Types
): Layer.Layer<Jobs, never, Exclude<Requirements<Types[number]>, JobContext>> =>
  Layer.effect(
    Jobs,
    Effect.gen(function*() {
      const context = yield* Effect.context<Exclude<Requirements<Types[number]>, JobContext>>()
      const byName = new Map<string, RegisteredJob>()
      for (const type of types) {
        if (byName.has(type.name)) throw new JobDefinitionError({ jobName: type.name, reason: "registered twice" })
        // The caller's context merged with the layer's, kept while the caller's stays the same (a
        // worker's attempts all run in one): a merge copies every service, which once ran per attempt.
        let parentSeen: Context.Context<never> | undefined
        let merged: Context.Context<never> = context
        byName.set(type.name, {
          type,
          perform: (payload) =>
            Effect.provide(type.perform(payload), context) as Effect.Effect<void, unknown, JobContext>,
          // The context read and set on the fiber in place: one step, where reading it and setting
          // it as effects would take several per attempt.
          run: (payload, job) =>
            Effect.withFiberRuntime((fiber) => {
              const parent = fiber.currentContext
              if (parent !== parentSeen) {
                parentSeen = parent
                merged = Context.merge(parent, context)
              }
              setInPlace(fiber, FiberRef.currentContext, Context.add(merged, JobContext, job))
              return type.perform(payload) as Effect.Effect<void, unknown>
            })
        })
      }
      return Jobs.of({ get: (name) => Option.fromNullable(byName.get(name)), names: [...byName.keys()] })
    })
  )
