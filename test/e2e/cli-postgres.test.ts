/** The leasehold CLI end to end on postgres, mostly in the test's own process (see ./support/cli.ts). */
import { cliSuite } from "../support/cli.ts"

cliSuite("postgres")
