/**
 * Prometheus metrics as the package exports them (`import { Metrics } from "leasehold"`): the
 * scrape's text, a node:http handler for it and a server of its own (docs/observability.md). The
 * counters behind them are updated by the worker itself (src/runtime/metrics.ts).
 */
export {
  DURATION_BUCKETS,
  handler,
  type MetricsHandler,
  type MetricsRequest,
  type MetricsResponse,
  type MetricsServer,
  PROMETHEUS_CONTENT_TYPE,
  render,
  serve,
  type ServeOptions
} from "./runtime/metrics.ts"
