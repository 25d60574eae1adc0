/** Old path of the JobStore pieces, kept while the restructuring moves callers (see docs/architecture.md). */
export * from "../core/model.ts"
export { applyClaim, showsOutcome } from "../core/transitions.ts"
export * from "../ports/JobStore.ts"
export { layer, make } from "./sql/JobStore.ts"
export { decodeHostRow, decodeJobRow } from "./sql/decode.ts"
