/**
 * `leasehold/dashboard`: the web dashboard as a node:http / Express handler
 * (docs/observability.md). `createDashboard({ url })` for any app; `nodeHandler(runtime)` for an Effect app
 * that already provides the services (`servicesLayer` over its SqlClient); `handle` for any other
 * server (a request in, a response out).
 */
export { type DashboardRequest, type DashboardResponse, type DashboardServices, handle } from "./dashboard/app.ts"
export {
  createDashboard,
  type Dashboard,
  type DashboardOptions,
  type HandlerOptions,
  nodeHandler,
  type NodeHandler,
  servicesLayer
} from "./dashboard/node.ts"
export { JobInsights, type JobInsightsApi } from "./ports/JobInsights.ts"
