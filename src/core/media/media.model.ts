/** TypeBox models of media files: the reply shape, and the values uploads and filters accept. */
import { Type as T, type Static } from "@sinclair/typebox";
import { IdOf, Name, Nullable } from "../validation/fields.ts";

export namespace MediaModel {
  /** What the audio is for; it decides where it can be used (a greeting on a voicemail box, hold music on a queue). */
  export const Kind = T.Union([T.Literal("prompt"), T.Literal("moh"), T.Literal("greeting"), T.Literal("announcement")], {
    description: "prompt (played by flows and queue options), moh (music on hold), greeting (voicemail), announcement.",
  });
  export type Kind = Static<typeof Kind>;

  /** The container of the uploaded audio. */
  export const Format = T.Union([T.Literal("wav"), T.Literal("mp3")], {
    description: "wav (PCM 8/16-bit, μ-law or A-law) or mp3 (MPEG-1/2/2.5 Layer III).",
  });
  export type Format = Static<typeof Format>;

  /** A media file as the API shows it. Every audio property is measured from the uploaded bytes. */
  export const MediaFile = T.Object(
    {
      id: IdOf("med"),
      name: Name(),
      kind: Kind,
      format: Format,
      content_type: T.String({ description: "audio/wav or audio/mpeg: what play and download send." }),
      object_key: T.String({ description: "Where the bytes are stored: <account_id>/media/<id>.<format>." }),
      size_bytes: T.Integer({ minimum: 1, description: "Size of the stored file in bytes." }),
      duration_ms: T.Integer({ minimum: 0, description: "Measured from the audio itself, in milliseconds." }),
      sample_rate: Nullable(T.Integer({ description: "Samples per second per channel, as measured." })),
      channels: Nullable(T.Integer({ description: "1 mono, 2 stereo, as measured." })),
      created_at: T.Integer({ description: "Epoch seconds." }),
    },
    { additionalProperties: false },
  );
  export type MediaFile = Static<typeof MediaFile>;

  /** An upload, as the service takes it (the route reads it from the query string and the raw body). */
  export interface Upload {
    name: string;
    kind: Kind;
    format: Format;
    /** The raw file. */
    bytes: Uint8Array;
  }

  /** List filters. */
  export interface ListFilter {
    kind?: Kind;
    format?: Format;
    /** Name prefix, case-insensitive. */
    q?: string;
  }
}
