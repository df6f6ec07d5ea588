/** Names that may not be an emergency number (EMERGENCY_NUMBERS): extensions' digits, users' usernames. */
import { validationFailed } from "../errors/app-error.ts";

/** What a create or update may not give as a dialable name: the platform's emergency numbers. */
export interface DialableRules {
  emergencyNumbers?: readonly string[];
}

/**
 * 400 at `path` when `value` is one of the platform's emergency numbers: dialled, those always go out as
 * an emergency call, never to the account's `what` (an extension, a user) of that name.
 * @example refuseEmergencyNumber(input.digits, rules, "/digits", "an extension")
 */
export function refuseEmergencyNumber(value: string | undefined, rules: DialableRules, path: string, what: string): void {
  if (value !== undefined && rules.emergencyNumbers?.includes(value)) {
    throw validationFailed([{ path, message: `${value} is an emergency number (EMERGENCY_NUMBERS): dialled, it always goes out as an emergency call, never to ${what}.` }]);
  }
}
