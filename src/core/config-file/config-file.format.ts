/**
 * Reading and writing the config file's text: YAML or JSON in, schema errors out with JSON pointers
 * into the file (`/trunks/2/proxy`), and a stable rendering for the export.
 */
import { Value } from "@sinclair/typebox/value";
import type { TSchema } from "@sinclair/typebox";
import { validationFailed, type ErrorDetail } from "../errors/app-error.ts";
import { ConfigFileModel } from "./config-file.model.ts";
import { PhoneInput } from "../validation/fields.ts";

const PHONE_PATTERN = PhoneInput().pattern;

/** At most this many problems are reported at once; the rest are summarized. */
const MAX_DETAILS = 100;

/**
 * The format of a file from its name (`.json` → json; `.yaml`, `.yml` → yaml), else from its first
 * character (`{` → json), else yaml.
 */
export function detectFormat(name: string | undefined, content: string): ConfigFileModel.Format {
  if (name && /\.json$/i.test(name)) return "json";
  if (name && /\.ya?ml$/i.test(name)) return "yaml";
  return content.trimStart().startsWith("{") ? "json" : "yaml";
}

/** Parses the text; a syntax error is a 400 at the file's root. */
export function parseConfigText(text: string, format: ConfigFileModel.Format): unknown {
  let value: unknown;
  try {
    value = format === "json" ? JSON.parse(text) : Bun.YAML.parse(text);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw validationFailed([{ path: "", message: `Not valid ${format.toUpperCase()}: ${reason}` }], "The config file could not be parsed.");
  }
  if (format === "yaml" && Array.isArray(value) && text.includes("\n---")) {
    throw validationFailed([{ path: "", message: "One YAML document per file: the file describes one account." }], "The config file could not be parsed.");
  }
  return value;
}

/** Checks the parsed file against the schema; every problem is a 400 detail at its JSON pointer. */
export function validateConfigShape(value: unknown): ConfigFileModel.File {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw validationFailed([{ path: "", message: "The file must be a mapping with `version: 1` and the sections to manage." }], "The config file is not valid.");
  }
  const details: ErrorDetail[] = [];
  const seen = new Set<string>();
  for (const error of Value.Errors(ConfigFileModel.File, value)) {
    if (seen.has(error.path)) continue;
    seen.add(error.path);
    details.push({ path: error.path, message: explain(error.schema, error.value, error.message) });
    if (details.length > MAX_DETAILS) break;
  }
  if (details.length) throw configInvalid(details);
  return value as ConfigFileModel.File;
}

/** A 400 for file problems, capped so a wholly wrong file still gets a readable reply. */
export function configInvalid(details: ErrorDetail[]): ReturnType<typeof validationFailed> {
  const shown = details.slice(0, MAX_DETAILS);
  if (details.length > MAX_DETAILS) shown.push({ path: "", message: `…and ${details.length - MAX_DETAILS} more problems.` });
  return validationFailed(shown, "The config file is not valid.");
}

/** TypeBox's message, made specific where it is generic. */
function explain(schema: TSchema, value: unknown, message: string): string {
  if (message === "Unexpected property") return "Unknown field.";
  if (message === "Expected required property") return "Required.";
  const branches = (schema as { anyOf?: TSchema[] }).anyOf;
  if (branches) {
    const literals = branches.map((b) => (b as { const?: unknown }).const).filter((c) => c !== undefined);
    if (literals.length === branches.length) return `Expected one of: ${literals.join(", ")}.`;
    const real = branches.filter((b) => (b as { type?: string }).type !== "null");
    if (real.length === 1) {
      const [inner] = Value.Errors(real[0]!, value);
      if (inner) return explain(real[0]!, value, inner.message);
    }
    return "Invalid value.";
  }
  if (typeof value === "number" && (schema as { type?: string }).type === "string") {
    return 'Expected a string: quote numbers in YAML ("0044…") so that leading zeros and + survive.';
  }
  const pattern = (schema as { pattern?: string }).pattern;
  if (pattern && typeof value === "string" && message.startsWith("Expected string to match")) {
    if (pattern === PHONE_PATTERN) return "Not a phone number: digits, with an optional leading + and spaces, dots, dashes or parentheses.";
    const description = (schema as { description?: string }).description;
    return description ? `Invalid format. Expected: ${description}` : "Invalid format.";
  }
  if ((schema as { format?: string }).format === "iso-country") return "Expected an ISO 3166-1 alpha-2 country code in upper case, e.g. US.";
  return `${message}.`;
}

/** Renders a file as text. YAML gets a header comment naming the account; JSON ends with a newline. */
export function renderConfig(file: ConfigFileModel.File, format: ConfigFileModel.Format, accountId: string): string {
  if (format === "json") return `${JSON.stringify(file, null, 2)}\n`;
  const body = Bun.YAML.stringify(file, null, 2);
  return `# Parley config for account ${accountId}. Apply with: parley config apply FILE --account-id ${accountId}\n${body.endsWith("\n") ? body : `${body}\n`}`;
}
