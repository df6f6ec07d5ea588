/** Test helpers: routing decisions and dialog sequences as the router and the edge produce them. */
import type { CacSlot, RouteDecision, RouteRequest, TraceStep } from "../routing/route-types.ts";

let seq = 0;

/** A fresh SIP Call-ID. */
export function sipCallId(): string {
  return `${Date.now().toString(36)}-${++seq}-${Math.random().toString(36).slice(2)}@test`;
}

/** A route request for `callId`. */
export function routeRequest(callId: string, over: Partial<RouteRequest> = {}): RouteRequest {
  return { callId, from: "14155550123", fromDomain: "acme.sip.test", to: "442071234567", ...over };
}

/** A decision to proxy/outbound a call of `accountId` holding `slots`. */
export function decision(accountId: string, over: Partial<RouteDecision> & { slots?: CacSlot[] } = {}): RouteDecision {
  const trace: TraceStep[] = [
    { at: Date.now(), step: "classify", result: "outbound call from a device" },
    { at: Date.now(), step: "outbound_route", result: "carrier" },
  ];
  return {
    reply: {
      rtjson: {
        action: "outbound",
        account_id: accountId,
        flow_id: null,
        vars: { direction: over.direction ?? "outbound" },
        version: "1.0",
        routing: "serial",
        routes: [{ uri: "sip:442071234567@carrier.test" }],
      },
    },
    accountId,
    direction: "outbound",
    from: "14155550123",
    to: "442071234567",
    userId: null,
    deviceId: null,
    numberId: null,
    trunkId: null,
    queueId: null,
    slots: [],
    trace,
    ...over,
  };
}
