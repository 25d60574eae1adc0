/**
 * Every error leasehold exports is an Error whose `name` is its tag, so a Promise API user (or a
 * log line) sees `PayloadError`, `Fenced`, … and never a job type's name in its place; the job
 * type an error concerns is in `jobName`.
 */
import { describe, expect, it } from "vitest"
import { MAX_TALLY_ERRORS, withError } from "../../src/core/jobs.ts"
import * as leasehold from "../../src/index.ts"

const errorClasses = Object.entries(leasehold as Record<string, unknown>).filter(
  (entry): entry is [string, new(fields: Record<string, unknown>) => Error & { _tag: string }] =>
    typeof entry[1] === "function" && entry[1].prototype instanceof Error
)

describe("exported errors", () => {
  it("are found", () => {
    expect(errorClasses.map(([name]) => name)).toEqual(
      expect.arrayContaining(["PayloadError", "Fenced", "UnknownJobTypeError", "JobDefinitionError"])
    )
  })

  it.each(errorClasses)("%s: an Error named by its tag, with the job type in jobName", (exported, ErrorClass) => {
    // The fields errors have, filled in (a field called `name` would shadow Error.name: the job
    // type goes in `jobName`).
    const error = new ErrorClass({
      jobName: "SendEmail",
      jobId: "j",
      attempt: 1,
      reason: "r",
      field: "f",
      packages: []
    })
    expect(error).toBeInstanceOf(Error)
    expect(error._tag).toBe(exported)
    expect(error.name).toBe(exported)
    expect(String(error)).toMatch(new RegExp(`^${exported}`))
  })
})

describe("a tally's errors", () => {
  it("keeps the last MAX_TALLY_ERRORS messages, oldest first", () => {
    let errors: ReadonlyArray<string> = []
    for (let i = 1; i <= MAX_TALLY_ERRORS + 5; i++) errors = withError(errors, `e${i}`)
    expect(errors).toHaveLength(MAX_TALLY_ERRORS)
    expect(errors[0]).toBe("e6")
    expect(errors.at(-1)).toBe(`e${MAX_TALLY_ERRORS + 5}`)
  })
})
