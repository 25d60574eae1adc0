/** `leasehold worker --jobs <module>`: runs the app's jobs until SIGINT or SIGTERM (../actions/worker.ts). */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as opt from "../options.ts"
import { action } from "./action.ts"

/** Migrates, then works the queues until interrupted; the running jobs get the grace period to finish. */
export const worker = Command.make(
  "worker",
  {
    ...opt.workerCommon,
    jobs: opt.jobsModule,
    queue: opt.text("queue", "queue", "A queue to work; repeat the option for several. Default: every queue.").pipe(
      Options.repeated,
      // Without this the usage line would show the repeated option as required.
      Options.withDefault([] as ReadonlyArray<string>)
    ),
    concurrency: opt.integer("concurrency", 1, "How many jobs this worker runs at once.", { default: "4" }).pipe(
      Options.withDefault(4)
    ),
    host: opt.text(
      "host",
      "name",
      "This worker's host name, as `status`, `drain` and the leases show it. Default: the machine's host name " +
        "and the process id."
    ).pipe(Options.optional),
    hostCap: opt.integer(
      "host-cap",
      0,
      "How many jobs may run at once on this host, over all its workers (0: no cap).",
      { default: "0" }
    ).pipe(Options.withDefault(0)),
    pollInterval: opt.duration("poll-interval", "How often an idle worker looks for work.", {
      positive: true,
      default: "1 second"
    }),
    logFormat: opt.choice(
      "log-format",
      ["logfmt", "json", "pretty"],
      "How log lines (on stderr) are written: logfmt, JSON objects, or pretty for people. Default: logfmt, " +
        "or json with --json."
    ).pipe(Options.optional),
    metricsPort: opt.integer(
      "metrics-port",
      1,
      "Serve Prometheus metrics at http://<metrics-host>:<port>/metrics. Default: no metrics server."
    ).pipe(Options.optional),
    metricsHost: opt.text("metrics-host", "address", "The address the metrics server listens on.", {
      default: "127.0.0.1"
    }).pipe(Options.withDefault("127.0.0.1")),
    gracePeriod: opt.duration(
      "grace-period",
      "How long running jobs may take to finish after SIGINT or SIGTERM before they are interrupted.",
      { positive: true, default: "30 seconds" }
    ),
    retentionCompleted: opt.keepFor(
      "retention-completed",
      "Completed jobs are deleted this long after they completed.",
      { default: "7 days" }
    ),
    retentionDead: opt.keepFor(
      "retention-dead",
      "Dead (failed, interrupted) and cancelled jobs are deleted this long after they ended.",
      { default: "30 days" }
    ),
    retentionHosts: opt.keepFor(
      "retention-hosts",
      "Host rows not seen for this long are deleted (a draining host's row is kept).",
      { default: "1 hour" }
    ),
    retentionLostLeases: opt.keepFor(
      "retention-lost-leases",
      "Records of lost leases (the dashboard's recently lost) are deleted this long after the loss; only the newest 1,000 are kept anyway.",
      { default: "7 days" }
    ),
    noRetention: opt.flag(
      "no-retention",
      "Delete no finished job and no host row (`leasehold jobs purge` still can). Not with --retention-…."
    )
  },
  action(() => import("../actions/worker.ts"), (m) => m.worker)
).pipe(
  Command.withDescription("Migrate, then run the jobs of the --jobs module until SIGINT or SIGTERM.")
)
