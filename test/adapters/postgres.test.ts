/** Every conformance suite (test/conformance/index.ts), run on the postgres adapter. */
import { runConformance } from "../conformance/index.ts"

runConformance("postgres")
