/**
 * Input checks every Fences store runs before touching its table, so the SQL stores and the
 * in-memory model refuse exactly the same input with the same error.
 */
import { Effect } from "effect"
import { FenceInputError } from "../core/errors.ts"
import { fenceInputProblem } from "../core/lease.ts"

/** Checks a guarded write's resource and token (a token of 0 checks the resource alone). */
export const validateFence = (resource: string, token: bigint = 0n): Effect.Effect<void, FenceInputError> => {
  const problem = fenceInputProblem(resource, token)
  return problem === undefined ? Effect.void : Effect.fail(new FenceInputError(problem))
}
