/**
 * The job store as the package exports it (`import { JobStore } from "leasehold"`): the service
 * Tags, its interface, and the SQL and in-memory layers. Most apps never touch it directly:
 * `Leasehold.layer` builds it; read it to list or inspect jobs.
 */
export { type InsertResult, JobLeases, JobStore, type JobStoreApi, type LocalWakeupsApi } from "./ports/JobStore.ts"
export type * from "./core/model.ts"
