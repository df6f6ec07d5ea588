/** How long a call may hold its CAC slots without a BYE. */
import type { Platform } from "../platform.ts";

/** CAC_MAX_CALL_SEC in ms (tests set a few seconds to expire leaked slots quickly). */
export function cacTtlMs(platform: Platform): number {
  return platform.config.cacMaxCallSec * 1000;
}
