/**
 * The chaos clock: the Effect `Clock` every chaos process (the workers and the controller) runs
 * under.
 *
 * leasehold's lease window and reaper grace are `t + max(60, t)` seconds of the *Clock*, so they
 * never drop below 61 s, whatever the timeouts. A chaos run that must see a worker paused for
 * longer than its lease window, and its work reaped and retried, several times within a couple of
 * minutes, therefore runs every process on a clock that reads `speed` times faster than the wall
 * clock from a shared anchor: `anchor + (wall − anchor) × speed`. All processes derive it from
 * the same wall clock and anchor, so they agree with each other exactly as hosts with synchronised
 * clocks do (this is not skew). Only the clock's *readings* are warped — lease expiry, staleness,
 * backoff, busy delays and run_at; `sleep` stays real, so poll intervals, heartbeat spacing, job
 * durations and job timeouts are wall-clock time. With `speed = 1` it is the plain wall clock.
 *
 * One worker additionally gets a `skewMs` offset on top (a host whose clock is wrong).
 */
import { Clock, Effect } from "effect"

/** How a chaos clock reads: warp factor, shared anchor, and this process's skew (all from env). */
export interface ChaosClockConfig {
  /** Clock readings advance this many times faster than the wall clock (≥ 1). */
  readonly speed: number
  /** Wall-clock epoch ms at which chaos time equals wall time. */
  readonly anchorMs: number
  /** Extra offset of this process's clock, in chaos ms (positive: ahead). */
  readonly skewMs: number
}

/** Chaos-time epoch ms for a wall-clock epoch ms (without skew). */
export const chaosTimeOf = (config: Pick<ChaosClockConfig, "speed" | "anchorMs">, wallMs: number): number =>
  Math.round(config.anchorMs + (wallMs - config.anchorMs) * config.speed)

/** Wall-clock epoch ms for a chaos-time epoch ms (the inverse of `chaosTimeOf`, without skew). */
export const wallTimeOf = (config: Pick<ChaosClockConfig, "speed" | "anchorMs">, chaosMs: number): number =>
  config.anchorMs + (chaosMs - config.anchorMs) / config.speed

/** A Clock that reads chaos time (plus skew) and sleeps in real time. */
export const chaosClock = (config: ChaosClockConfig): Clock.Clock => {
  const live = Clock.make()
  const millis = () => chaosTimeOf(config, Date.now()) + config.skewMs
  return {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: millis,
    currentTimeMillis: Effect.sync(millis),
    unsafeCurrentTimeNanos: () => BigInt(millis()) * 1_000_000n,
    currentTimeNanos: Effect.sync(() => BigInt(millis()) * 1_000_000n),
    // Real sleeps (a live clock's), whatever the warp.
    sleep: (duration) => live.sleep(duration)
  }
}

/** Reads a chaos clock's configuration from CHAOS_SPEED, CHAOS_ANCHOR_MS and CHAOS_SKEW_MS. */
export const clockConfigFromEnv = (env: NodeJS.ProcessEnv): ChaosClockConfig => {
  const num = (name: string, fallback: number) => {
    const raw = env[name]
    if (raw === undefined || raw === "") return fallback
    const n = Number(raw)
    if (!Number.isFinite(n)) throw new Error(`${name} is not a number: ${raw}`)
    return n
  }
  const speed = num("CHAOS_SPEED", 1)
  if (speed < 1) throw new Error(`CHAOS_SPEED must be ≥ 1, got ${speed}`)
  return { speed, anchorMs: num("CHAOS_ANCHOR_MS", Date.now()), skewMs: Math.round(num("CHAOS_SKEW_MS", 0)) }
}
