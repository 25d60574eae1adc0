/** Every conformance suite, run on the mysql adapter. */
import { jobConformance } from "../conformance/jobs.ts"
import { leaseLockConformance } from "../conformance/leaseLock.ts"

leaseLockConformance("mysql")
jobConformance("mysql")
