/**
 * A JSON body the client may leave out. Elysia lets an optional body schema through unchecked when
 * the body does not parse (as if absent) or is not an object (a string, an array), so the route
 * declares the model itself (every field optional) and an absent or empty body becomes `{}` before
 * validation: nothing sent means the defaults, and anything sent must parse and match the model.
 * @example app.post("/test", ({ body }) => …, { ...optionalBody(DeliveryModel.Test), response: … })
 */
import type { TObject } from "@sinclair/typebox";

/** Requests whose body was empty (Content-Length: 0), which the parser gave as null: not a JSON null. */
const emptyBodies = new WeakSet<Request>();

/** Marks a request's body as empty (the host's parser, when it answers null for it). */
export function markEmptyBody(request: Request): void {
  emptyBodies.add(request);
}

export function optionalBody<S extends TObject>(model: S) {
  return {
    body: model,
    transform(context: { body: unknown; request: Request }) {
      if (context.body === undefined || (context.body === null && emptyBodies.has(context.request))) context.body = {};
    },
  };
}
