/**
 * Writes admitted calls together. Each admission is three rows (the call record, its trace steps,
 * call.started) in one transaction; written one call at a time, a call costs a transaction of its
 * own (begin, the three inserts, commit). The writer keeps at most WRITERS transactions in flight;
 * calls admitted while they are busy wait and go together in the next one (at most MAX_BATCH): at
 * low load each call is written at once, alone, and under load the statements per call fall as the
 * batches grow, which is when the database's time is short.
 *
 * A call whose SIP Call-ID its account already has (another instance recorded it first) is not
 * written: its batch is rolled back and written again without it, and it is answered false. Any
 * other failure fails nobody else: the batch's calls are written again one by one, so only a call
 * that fails alone gets the error.
 */
import type { EventInput } from "../events/bus.ts";
import type { Platform } from "../platform.ts";
import { insertCalls, insertTrace, sipKey, type NewCallRecord, type NewTraceStep } from "./calls.store.ts";

/** Transactions in flight at once per process (more would only take the batches apart). */
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
  /** Transactions committed so far (tests, diagnostics). */
  readonly batches: number;
}

interface Waiting extends AdmissionRows {
  done(inserted: boolean): void;
  failed(error: unknown): void;
}

/** The batch had calls whose Call-ID was taken: it was rolled back; these are the ones that were not. */
class CallIdsTaken extends Error {
  constructor(readonly inserted: Set<string>) {
    super("a Call-ID of the batch is already recorded");
  }
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

  /** One transaction for `list`: null when every call was written, else the calls that were not taken (nothing written). */
  async function writeOnce(list: Waiting[]): Promise<Set<string> | null> {
    try {
      await platform.events.transaction(async (tx, _emit, emitMany) => {
        // The three inserts go out together (pipelined on the transaction's connection); a taken
        // Call-ID rolls all of them back.
        const [inserted] = await Promise.all([
          insertCalls(tx, list.map((w) => w.call)),
          insertTrace(tx, list.flatMap((w) => w.steps)),
          emitMany(list.flatMap((w) => (w.started ? [w.started] : []))),
        ]);
        if (inserted.size < list.length) throw new CallIdsTaken(inserted);
      });
      batches += 1;
      return null;
    } catch (error) {
      if (error instanceof CallIdsTaken) return error.inserted;
      throw error;
    }
  }

  async function writeBatch(batch: Waiting[]): Promise<void> {
    let left = batch;
    try {
      for (;;) {
        const inserted = await writeOnce(left);
        if (inserted === null) {
          for (const w of left) w.done(true);
          return;
        }
        const next: Waiting[] = [];
        for (const w of left) {
          if (inserted.has(sipKey(w.call.account_id, w.call.sip_call_id))) next.push(w);
          else w.done(false);
        }
        left = next;
        if (!left.length) return;
      }
    } catch (error) {
      if (left.length === 1) return left[0]!.failed(error);
      // One call's bad row must not fail the others: each is written again alone.
      for (const w of left) await writeBatch([w]);
    }
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
