/**
 * Input rules every entry point shares (docs/behaviour.md §2, §4): which text can be stored
 * as written, the trailing-space rule, and whole numbers that fit an INT column.
 */

/** Smallest value of a 32-bit INT column. */
export const MIN_INT32 = -(2 ** 31)
/** Largest value of a 32-bit INT column. */
export const MAX_INT32 = 2 ** 31 - 1

/** Whether `n` is a whole number an INT column holds. */
export const isInt32 = (n: number): boolean => Number.isSafeInteger(n) && n >= MIN_INT32 && n <= MAX_INT32

/**
 * Why a string cannot be stored as written in a text column of every database, or `undefined`
 * when it can: PostgreSQL refuses a NUL character, and an unpaired UTF-16 surrogate (not valid
 * Unicode) is silently replaced by U+FFFD on its way to the database, so it would not read back
 * as written and two different strings could become one key.
 */
export const textProblem = (value: string): string | undefined => {
  if (value.includes("\u0000")) return "contains a NUL character"
  if (/\p{Cs}/u.test(value)) return "contains an unpaired surrogate (not valid Unicode)"
  return undefined
}

/**
 * Why a string used as a key (a lease name or owner, a unique key, a job or queue name, a host)
 * cannot be stored, or `undefined`: `textProblem`, or a trailing space. MySQL/MariaDB compare
 * strings without trailing spaces (PAD SPACE collations), so `x` and `x ` would be one key there
 * and two elsewhere; they are refused on every database instead.
 */
export const keyProblem = (value: string): string | undefined =>
  textProblem(value) ?? (value.endsWith(" ") ? "ends with a space" : undefined)
