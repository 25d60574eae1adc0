/**
 * Whether a tracer is installed: one other than Effect's default, whose spans go nowhere. Read
 * where leasehold builds spans only under a real tracer (src/runtime/tracing.ts) and where a
 * store's statements keep @effect/sql's `sql.execute` spans (src/adapters/sql/direct.ts).
 */
import { Context, DefaultServices, Tracer } from "effect"

/** Effect's default tracer. */
const defaultTracer = Context.get(DefaultServices.liveServices, Tracer.Tracer)

/** True when `tracer` is not Effect's default: spans made under it go somewhere. */
export const isTracing = (tracer: Tracer.Tracer): boolean => tracer !== defaultTracer
