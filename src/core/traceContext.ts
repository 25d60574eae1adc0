/**
 * The trace context a job carries from its enqueue to its attempts (docs/tracing.md): a W3C
 * `traceparent` (`00-<trace id>-<span id>-<flags>`, 55 characters), stored in the jobs table's
 * `trace_context` column (migration 9, src/adapters/sql/schema.ts). Plain text in and out: the
 * runtime turns it into a span link (src/runtime/tracing.ts).
 */

/** The span a trace context names. */
export interface SpanContext {
  /** 32 lowercase hex digits, not all zero. */
  readonly traceId: string
  /** 16 lowercase hex digits, not all zero. */
  readonly spanId: string
  readonly sampled: boolean
}

const TRACE_ID = /^[0-9a-f]{32}$/
const SPAN_ID = /^[0-9a-f]{16}$/
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

/**
 * The traceparent of a span, or undefined when its ids are not W3C ids (Effect's own spans
 * have them; a tracer of another shape may not) or are all zeros (invalid by the spec).
 */
export const formatTraceparent = (span: SpanContext): string | undefined =>
  TRACE_ID.test(span.traceId) && SPAN_ID.test(span.spanId) && !/^0+$/.test(span.traceId) &&
    !/^0+$/.test(span.spanId)
    ? `00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`
    : undefined

/** The span a stored traceparent names, or undefined for NULL or anything not a version-00 traceparent. */
export const parseTraceparent = (text: string | null | undefined): SpanContext | undefined => {
  if (typeof text !== "string") return undefined
  const m = TRACEPARENT.exec(text)
  if (m === null || /^0+$/.test(m[1]!) || /^0+$/.test(m[2]!)) return undefined
  return { traceId: m[1]!, spanId: m[2]!, sampled: (parseInt(m[3]!, 16) & 1) === 1 }
}
