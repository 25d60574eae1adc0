/** Every conformance suite (test/conformance/index.ts), run on the mysql adapter. */
import { runConformance } from "../conformance/index.ts"

runConformance("mysql")
