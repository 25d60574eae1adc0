/**
 * The odd and bad inputs of the bad-input catalogue (issue 6), as plain data: shared by the
 * conformance areas in this folder and by the store-free checks in test/unit/. Nothing here
 * touches a store.
 */
import { createHash } from "node:crypto"

/** The catalogue's fixed instant, 1791039632175 epoch ms (docs/behaviour.md §11). */
export const T0 = 1_791_039_632_175
/** One second, in ms. */
export const SECOND = 1000
/** The lease window of a 300 s job: 300 + max(60, 300) seconds (docs/behaviour.md §3). */
export const WINDOW = 600 * SECOND

/**
 * Odd text: quotes, SQL, comments, backslashes, control characters (no NUL) and unicode. None
 * starts or ends with whitespace, so none is changed by the trimming of concurrency keys, and
 * each fits every field (at most 64 characters, the shortest limit: lease owners).
 */
export const ODD: ReadonlyArray<readonly [label: string, value: string]> = [
  ["quotes", `it's "quoted" and \`ticked\``],
  ["SQL injection", "x'); DROP TABLE jobs; --"],
  ["semicolons and comments", "a;b -- c /* d */ e#f"],
  ["backslashes", "back\\slash \\' \\\" \\\\ \\n \\0 end\\"],
  ["a tab", "tab\there"],
  ["newlines", "line\nfeed and carriage\rreturn\r\nx"],
  ["control characters", "ctrl\x01 unit\x1f del\x7f"],
  ["emoji", "rocket 🚀 family 👩‍👩‍👧 flag 🇫🇷"],
  ["combining marks", "e\u0301 n\u0303 a\u0308\u0301 (NFD)"],
  ["right-to-left", "rtl שלום مرحبا \u202eevil\u202c!"],
  ["wildcards and placeholders", "100% _like_ $1 ? :name @p0 %s {}"]
]

/** Text that no database column can hold as written: refused wherever it is an identifier or key. */
export const UNSTORABLE: ReadonlyArray<readonly [label: string, value: string]> = [
  ["a NUL character", "a\u0000b"],
  ["an unpaired high surrogate", "a\ud800b"],
  ["an unpaired low surrogate", "\udc00z"]
]

/**
 * A string of exactly `n` UTF-16 code units built from `seed` (never splitting a surrogate pair)
 * and ending in "z", so its last character is not whitespace.
 */
export const sized = (n: number, seed = "k'\";-\\é名ß\t"): string => {
  let s = ""
  for (const ch of seed.repeat(n)) {
    if (s.length + ch.length > n - 1) break
    s += ch
  }
  return s.padEnd(n, "z")
}

/** The lease name docs/behaviour.md §3 gives: prefix + key when it fits in 100, else prefix + SHA-256 hex. */
export const fittedLease = (prefix: string, key: string) =>
  (prefix + key).length <= 100 ? prefix + key : prefix + createHash("sha256").update(key, "utf8").digest("hex")
