/**
 * What a client layer says when it cannot reach its database: where it tried (the URL or file,
 * its password masked) and the driver's own reason, in the message itself, the first thing a
 * user reads, with the driver's error kept as the cause.
 */
import { SqlError } from "@effect/sql/SqlError"
import { maskCredentials } from "../infra/credentials.ts"
import { innermostMessage } from "./schemaErrors.ts"

/**
 * The failure to reach `target` (a server's URL; with `file`, an SQLite file) whose driver error
 * is `cause`.
 */
export const connectError = (target: string, cause: unknown, file = false): SqlError =>
  new SqlError({
    cause,
    message: `cannot ${file ? "open" : "connect to"} ${maskCredentials(target)}: ${innermostMessage(cause)}`
  })
