/**
 * Peak resident memory of the current (child) process. On Linux, writing "5" to
 * /proc/self/clear_refs resets the high-water mark (VmHWM) to the current RSS, so a scenario
 * can measure the peak of its timed phase only (after enqueueing, before draining).
 * Elsewhere, the whole-process `process.resourceUsage().maxRSS` is used.
 */
import { readFileSync, writeFileSync } from "node:fs"

const statusKb = (field: "VmHWM" | "VmRSS"): number | undefined => {
  try {
    const m = readFileSync("/proc/self/status", "utf8").match(new RegExp(`${field}:\\s+(\\d+)\\s+kB`))
    return m?.[1] === undefined ? undefined : Number(m[1])
  } catch {
    return undefined
  }
}

let resetDone = false
let maxBeforeResetKb = 0

/** Collects garbage (when run with --expose-gc) and resets the peak to the current RSS. */
export const resetPeak = (): void => {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc !== undefined) gc()
  maxBeforeResetKb = Math.max(maxBeforeResetKb, process.resourceUsage().maxRSS, statusKb("VmHWM") ?? 0)
  try {
    writeFileSync("/proc/self/clear_refs", "5")
    resetDone = true
  } catch {
    resetDone = false
  }
}

/** Peak RSS in MiB since `resetPeak` (if it worked), else over the whole process. */
export const peakMb = (): number => {
  const hwm = resetDone ? statusKb("VmHWM") : undefined
  return (hwm ?? process.resourceUsage().maxRSS) / 1024
}

/** Peak RSS in MiB over the whole process. */
export const processMaxMb = (): number =>
  Math.max(maxBeforeResetKb, process.resourceUsage().maxRSS, statusKb("VmHWM") ?? 0) / 1024
