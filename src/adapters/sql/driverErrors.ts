/** Reading a driver error: its code, and whether it is a lost or refused network connection. */

/** Socket-level error codes that Node's net module and both network drivers use. */
const NETWORK_CODES = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN"
])

/** Whether a cause (or the cause inside it) carries a socket-level error code. */
export const isNetworkError = (cause: unknown): boolean => {
  for (let c = cause, depth = 0; c !== null && typeof c === "object" && depth < 4; depth++) {
    if (NETWORK_CODES.has(errorCode(c) ?? "")) return true
    c = (c as { cause?: unknown }).cause
  }
  return false
}

/** The driver's error code, if it has one. */
export const errorCode = (cause: unknown): string | undefined => {
  const code = (cause as { code?: unknown } | null)?.code
  return typeof code === "string" ? code : undefined
}
