-- A call record per INVITE: the Call-ID and the INVITE's CSeq number are unique together per account
-- (a new INVITE reusing a Call-ID is a call of its own; docs/decisions.md).
DROP INDEX "call_record_sip_call_id_uq";--> statement-breakpoint
ALTER TABLE "call_record" ADD COLUMN "sip_cseq" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "call_record_sip_call_id_uq" ON "call_record" USING btree ("sip_call_id","account_id","sip_cseq");