/** Every conformance suite, run on the sqlite adapter. */
import { jobConformance } from "../conformance/jobs.ts"
import { leaseLockConformance } from "../conformance/leaseLock.ts"

leaseLockConformance("sqlite")
jobConformance("sqlite")
