/** Every conformance suite (test/conformance/index.ts), run on the sqlite adapter. */
import { runConformance } from "../conformance/index.ts"

runConformance("sqlite")
