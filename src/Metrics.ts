/**
 * Prometheus metrics as the package exports them (`import { Metrics } from "leasehold"`): the
 * scrape's text, a node:http handler for it and a server of its own (docs/observability.md). The
 * counters behind them are updated by the worker itself (src/runtime/metrics.ts).
 */
export { DURATION_BUCKETS, LIMIT_WAIT_BUCKETS, PROMETHEUS_CONTENT_TYPE, render } from "./runtime/metrics.ts"
export {
  handler,
  type MetricsHandler,
  type MetricsRequest,
  type MetricsResponse,
  type MetricsServer,
  serve,
  type ServeOptions
} from "./runtime/metricsServer.ts"
