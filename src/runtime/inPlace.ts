/**
 * Setting a FiberRef on the running fiber in place, from inside `Effect.withFiberRuntime`: what
 * `FiberRef.set` does, without its own two steps (the attempt's log annotations and perform's
 * context are set on every job's path).
 */
import type { Fiber, FiberRef } from "effect"

// Effect 3's runtime fibers have this method (`FiberRef.set` is a call of it in a step of its
// own); `Fiber.RuntimeFiber`'s public type lists only `getFiberRef`. Every attempt goes through
// it, so a version without it fails the whole test suite at once, never silently.
interface Settable {
  readonly setFiberRef: <A>(ref: FiberRef.FiberRef<A>, value: A) => void
}

/** Sets `ref` to `value` on `fiber`, the fiber running the caller (`Effect.withFiberRuntime`'s). */
export const setInPlace = <A>(fiber: Fiber.RuntimeFiber<unknown, unknown>, ref: FiberRef.FiberRef<A>, value: A): void =>
  (fiber as unknown as Settable).setFiberRef(ref, value)
