/**
 * An app may build the `Jobs` registry itself (src/runtime/Job.ts `JobsApi`). A registered job
 * without the optional `run` still runs, with its `JobContext` provided by the worker.
 */
import { expect, it } from "@effect/vitest"
import { Effect, Layer, Option, Ref, Schema } from "effect"
import { Job } from "../../src/index.ts"
import { processNext } from "../../src/runtime/Worker.ts"
import { TestLeasehold } from "../../src/testing.ts"

const seen = Ref.unsafeMake<ReadonlyArray<string>>([])

const Greet = Job.define({
  name: "Greet",
  schema: Schema.Struct({ who: Schema.String }),
  perform: (p) =>
    Effect.flatMap(Job.JobContext, (context) => Ref.update(seen, (s) => [...s, `${p.who} ${context.jobId}`]))
})

/** The registry the kit builds, with each job's `run` left out, as an app's own registry would. */
const withoutRun = Layer.effect(
  Job.Jobs,
  Effect.map(Job.Jobs, (jobs) => ({
    names: jobs.names,
    get: (name: string) => Option.map(jobs.get(name), ({ perform, type }) => ({ type, perform }))
  }))
)

it.effect("a registry whose jobs have no run: perform runs with its JobContext", () =>
  Effect.gen(function*() {
    const { id } = yield* Job.enqueue(Greet, { who: "ada" })
    expect(yield* processNext()).toMatchObject({ _tag: "Completed" })
    expect(yield* Ref.get(seen)).toEqual([`ada ${id}`])
  }).pipe(
    Effect.provide(Layer.provideMerge(withoutRun, TestLeasehold.layer({ prefix: "registry_", jobs: [Greet] })))
  ))
