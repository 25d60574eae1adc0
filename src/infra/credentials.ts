/** Keeping passwords out of logs and error messages. */

/** Masks the password of every URL in `text`: `//user:password@` → `//user:***@`. */
export const maskCredentials = (text: string): string => text.replace(/\/\/([^:@/\s]*):([^@/\s]+)@/g, "//$1:***@")
