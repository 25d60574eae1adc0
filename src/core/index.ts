/** leasehold/core: the pure rules (lease naming, windows, delays, decisions) and typed errors. */
export * from "./errors.ts"
export * from "./lease.ts"
