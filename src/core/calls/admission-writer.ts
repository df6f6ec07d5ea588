/**
 * Writes admitted calls together. Each admission is three rows (the call record, its trace steps,
 * call.started), written by one statement (EventBus.statement: no transaction to open and commit,
 * one round trip). The writer keeps at most WRITERS statements in flight; calls admitted while they
 * are busy wait and go together in the next one (at most MAX_BATCH): at low load each call is written
 * at once, alone, and under load the statements per call fall as the batches grow, which is when the
 * database's time is short.
 *
 * A call whose SIP Call-ID its account already has (another instance recorded it first) is not
 * written, nor its trace or event, and is answered false; the others of its batch are written. Any
 * other failure fails nobody else: the batch's calls are written again one by one, so only a call
 * that fails alone gets the error.
 */
import { sql } from "drizzle-orm";
import type { EventInput } from "../events/bus.ts";
import type { Platform } from "../platform.ts";
import { admissionCtes, type NewCallRecord, type NewTraceStep } from "./calls.store.ts";

/** The key an admission reports a written call by: its account and call id. */
const recordKey = (accountId: string, id: string) => `${accountId}\u0000${id}`;

/** Statements in flight at once per process (more would only take the batches apart). */
const WRITERS = 2;
/** Most calls one transaction writes. */
const MAX_BATCH = 256;

/** One admitted call to write. */
export interface AdmissionRows {
  call: NewCallRecord & { account_id: string; sip_call_id: string };
  steps: NewTraceStep[];
  /** call.started, for a routed call (a rejected call has none). */
  started: EventInput | null;
}

export interface AdmissionWriter {
  /** Writes the call with its trace and event; false when its account already has a call with its SIP Call-ID (nothing written). */
  write(rows: AdmissionRows): Promise<boolean>;
  /** Statements committed so far (tests, diagnostics). */
  readonly batches: number;
}

interface Waiting extends AdmissionRows {
  done(inserted: boolean): void;
  failed(error: unknown): void;
}

/**
 * The writer of one platform (admission.ts keeps one per platform).
 * @example const writer = createAdmissionWriter(platform); const inserted = await writer.write({ call, steps, started });
 */
export function createAdmissionWriter(platform: Platform, options: { writers?: number } = {}): AdmissionWriter {
  const writers = options.writers ?? WRITERS;
  const queue: Waiting[] = [];
  let writing = 0;
  let batches = 0;

  /** One statement for `list`: the keys (account and call id) of the calls written. */
  async function writeOnce(list: Waiting[]): Promise<Set<string>> {
    const { result } = await platform.events.statement({
      ctes: (gate) =>
        admissionCtes(
          list.map((w) => w.call),
          list.flatMap((w) => w.steps),
          gate,
        ),
      events: list.flatMap((w) => (w.started ? [{ ...w.started, key: w.call.id }] : [])),
      keep: sql`exists (select 1 from adm_call c where c.account_id = i.account_id and c.id = i.key)`,
      result: sql`(select coalesce(json_agg(json_build_array(account_id, id)), '[]') from adm_call)`,
    });
    batches += 1;
    // By the call's own id: two admissions of one INVITE in a batch (a claim that expired meanwhile)
    // share a Call-ID, and only the one inserted was written.
    return new Set((result as Array<[string, string]>).map(([accountId, id]) => recordKey(accountId, id)));
  }

  async function writeBatch(batch: Waiting[]): Promise<void> {
    let written: Set<string>;
    try {
      written = await writeOnce(batch);
    } catch (error) {
      if (batch.length === 1) return batch[0]!.failed(error);
      // One call's bad row must not fail the others: each is written again alone.
      for (const w of batch) await writeBatch([w]);
      return;
    }
    for (const w of batch) w.done(written.has(recordKey(w.call.account_id, w.call.id)));
  }

  function pump(): void {
    while (writing < writers && queue.length) {
      const batch = queue.splice(0, MAX_BATCH);
      writing += 1;
      void writeBatch(batch).finally(() => {
        writing -= 1;
        pump();
      });
    }
  }

  return {
    write(rows) {
      return new Promise<boolean>((done, failed) => {
        queue.push({ ...rows, done, failed });
        pump();
      });
    },
    get batches() {
      return batches;
    },
  };
}
