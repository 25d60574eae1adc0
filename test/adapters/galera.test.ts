/**
 * Every conformance suite (test/conformance/index.ts) on a three-node MariaDB Galera cluster
 * (scripts/galera/start; .ci/run starts it), each test's statements spread over the three nodes by
 * leasehold's cluster client (src/adapters/mysql/cluster.ts). A cluster that is not up fails every
 * suite here: nothing is skipped.
 */
import { runConformance } from "../conformance/index.ts"

runConformance("galera")
