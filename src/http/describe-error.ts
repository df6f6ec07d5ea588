/**
 * What of an unexpected error may be logged: its class, its SQLSTATE if any, and a message with no
 * SQL and no parameters (drizzle puts the whole query and its bound values in its own message).
 */
export function describeError(error: unknown): { name: string; code?: string; message: string } {
  if (!(error instanceof Error)) return { name: "NonError", message: String(error).slice(0, 200) };
  let source: unknown = error;
  if (error.message.startsWith("Failed query")) source = error.cause ?? { message: "query failed" };
  const message = source instanceof Error || (source && typeof source === "object" && "message" in source)
    ? String((source as { message: unknown }).message)
    : "error";
  const code = (source as { code?: unknown })?.code;
  return {
    name: error.name,
    ...(typeof code === "string" ? { code } : {}),
    message: message.split("\n")[0]!.slice(0, 300),
  };
}
