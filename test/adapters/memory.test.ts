/** Every conformance suite, run on the memory adapter. */
import { jobConformance } from "../conformance/jobs.ts"
import { leaseLockConformance } from "../conformance/leaseLock.ts"

leaseLockConformance("memory")
jobConformance("memory")
