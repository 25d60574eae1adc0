/**
 * A job type whose payload schema decodes asynchronously still runs the payloads another version
 * of the app stored (src/runtime/worker/attempt.ts decodes synchronous schemas in place and runs
 * the others as effects); one whose asynchronous decode fails fails the attempt with the reason.
 */
import { expect, it } from "@effect/vitest"
import { Effect, ParseResult, Ref, Schema } from "effect"
import { Job } from "../../src/index.ts"
import { processNext } from "../../src/runtime/Worker.ts"
import { TestLeasehold } from "../../src/testing.ts"

const seen = Ref.unsafeMake<ReadonlyArray<number>>([])

/** A number stored as a string, parsed by a promise on the way in. */
const Later = Schema.transformOrFail(Schema.String, Schema.Number, {
  strict: true,
  decode: (s, _, ast) =>
    Effect.flatMap(
      Effect.promise(() => Promise.resolve(Number(s))),
      (n) => Number.isNaN(n) ? ParseResult.fail(new ParseResult.Type(ast, s, "not a number")) : ParseResult.succeed(n)
    ),
  encode: (n) => ParseResult.succeed(String(n))
})

const Count = Job.define({
  name: "Count",
  schema: Schema.Struct({ n: Later }),
  perform: (p) => Ref.update(seen, (s) => [...s, p.n])
})

/** Another version of the app's `Count`: `n` stored as the string it is, decoded synchronously. */
const OldCount = Job.define({
  name: "Count",
  schema: Schema.Struct({ n: Schema.String }),
  perform: () => Effect.void
})

const layer = TestLeasehold.layer({ prefix: "async_payload_", jobs: [Count] })

it.effect("a payload with an asynchronous decode runs with the decoded value", () =>
  Effect.gen(function*() {
    // Enqueued by a version whose schema decodes synchronously (enqueue checks that a payload
    // decodes again at once, src/runtime/Job.ts); run by this one.
    yield* Job.enqueue(OldCount, { n: "42" })
    expect(yield* processNext()).toMatchObject({ _tag: "Completed" })
    expect(yield* Ref.get(seen)).toEqual([42])
  }).pipe(Effect.provide(layer)))

it.effect("a payload whose asynchronous decode fails fails the attempt with the reason", () =>
  Effect.gen(function*() {
    yield* Job.enqueue(OldCount, { n: "many" })
    const before = (yield* Ref.get(seen)).length
    const result = yield* processNext()
    expect(result).toMatchObject({ _tag: "Failed" })
    expect(result._tag === "Failed" ? result.error : "").toContain("not a number")
    expect(yield* Ref.get(seen)).toHaveLength(before)
  }).pipe(Effect.provide(layer)))
