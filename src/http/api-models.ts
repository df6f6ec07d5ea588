/** Shared models registered by name, so OpenAPI holds them once as components and routes refer to them. */
import { Elysia } from "elysia";
import { ErrorBody } from "./reply-models.ts";

export const apiModels = new Elysia({ name: "api-models", normalize: false }).model({ Error: ErrorBody });
