/**
 * Audio files built in code, for tests: WAV of any encoding, size and chunk layout, and MP3 streams of
 * hand-built Layer III frame headers with silent (zero) payloads. No binary fixture is checked in, so
 * every expected duration is arithmetic the reader can check.
 */

/** Little-endian writer helpers. */
function u16(value: number): number[] {
  return [value & 0xff, (value >> 8) & 0xff];
}

function u32(value: number): number[] {
  return [value & 0xff, (value >>> 8) & 0xff, (value >>> 16) & 0xff, (value >>> 24) & 0xff];
}

function be32(value: number): number[] {
  return [(value >>> 24) & 0xff, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff];
}

function text(value: string): number[] {
  return [...value].map((c) => c.charCodeAt(0));
}

/** One RIFF chunk: id, size, body and the pad byte an odd size needs (unless `pad` is false). */
export function riffChunk(id: string, body: Uint8Array | number[], pad = true): number[] {
  const bytes = [...body];
  return [...text(id), ...u32(bytes.length), ...bytes, ...(pad && bytes.length % 2 ? [0] : [])];
}

export interface WavSpec {
  /** WAVE format code: 1 PCM, 6 A-law, 7 μ-law, 0x11 IMA ADPCM… Default 1. */
  code?: number;
  channels?: number;
  sampleRate?: number;
  bitsPerSample?: number;
  /** Sample frames of audio (each `channels × bits/8` bytes). */
  frames: number;
  /** Wrap the format in WAVE_FORMAT_EXTENSIBLE. */
  extensible?: boolean;
  /** Chunks placed between `fmt ` and `data` (e.g. a LIST chunk). */
  extraChunks?: number[][];
  /** Overrides of the `fmt ` fields, to make a lying header. */
  byteRate?: number;
  blockAlign?: number;
  /** Overrides the RIFF size field. */
  riffSize?: number;
  /** Overrides the `data` size field (the bytes written stay `frames × blockAlign`). */
  dataSize?: number;
}

/** A complete WAV file. */
export function buildWav(spec: WavSpec): Uint8Array {
  const code = spec.code ?? 1;
  const channels = spec.channels ?? 1;
  const sampleRate = spec.sampleRate ?? 8000;
  const bits = spec.bitsPerSample ?? (code === 1 ? 16 : 8);
  const blockAlign = spec.blockAlign ?? (channels * bits) / 8;
  const byteRate = spec.byteRate ?? sampleRate * blockAlign;
  const common = [...u16(channels), ...u32(sampleRate), ...u32(byteRate), ...u16(blockAlign), ...u16(bits)];
  const fmtBody = spec.extensible
    ? [...u16(0xfffe), ...common, ...u16(22), ...u16(bits), ...u32(channels === 1 ? 4 : 3), ...u16(code), ...[0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71]]
    : [...u16(code), ...common];
  const audio = new Array<number>(spec.frames * ((channels * bits) / 8)).fill(code === 7 ? 0xff : code === 6 ? 0xd5 : 0);
  let data = riffChunk("data", audio);
  if (spec.dataSize !== undefined) data = [...text("data"), ...u32(spec.dataSize), ...audio, ...(audio.length % 2 ? [0] : [])];
  const body = [...text("WAVE"), ...riffChunk("fmt ", fmtBody), ...(spec.extraChunks ?? []).flat(), ...data];
  return new Uint8Array([...text("RIFF"), ...u32(spec.riffSize ?? body.length), ...body]);
}

/** A Layer III frame: `version` "1" (44.1 kHz family), "2" or "2.5"; `bitrateIndex` and `sampleRateIndex` as in the header. */
export interface Mp3FrameSpec {
  version?: "1" | "2" | "2.5";
  /** 1–14. Default 9 (MPEG-1: 128 kbps; MPEG-2/2.5: 80 kbps). */
  bitrateIndex?: number;
  /** 0–2. Default 0 (44100 / 22050 / 11025 Hz). */
  sampleRateIndex?: number;
  mono?: boolean;
  padding?: boolean;
  /** Layer bits: 1 = Layer III (default), 2 = Layer II, 3 = Layer I. */
  layerBits?: number;
}

const BITRATES_V1 = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320];
const BITRATES_V2 = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160];
const RATES: Record<string, number[]> = { "1": [44100, 48000, 32000], "2": [22050, 24000, 16000], "2.5": [11025, 12000, 8000] };

/** Bytes of one frame of `spec`, header included (the formula of the MPEG Layer III standard). */
export function mp3FrameLength(spec: Mp3FrameSpec = {}): number {
  const version = spec.version ?? "1";
  const kbps = (version === "1" ? BITRATES_V1 : BITRATES_V2)[spec.bitrateIndex ?? 9]!;
  const rate = RATES[version]![spec.sampleRateIndex ?? 0]!;
  return Math.floor(((version === "1" ? 144_000 : 72_000) * kbps) / rate) + (spec.padding ? 1 : 0);
}

/** One frame: a valid header, then zeros (silence to a reader of headers) up to the frame length. */
export function mp3Frame(spec: Mp3FrameSpec = {}, payload: number[] = []): number[] {
  const version = spec.version ?? "1";
  const versionBits = version === "1" ? 3 : version === "2" ? 2 : 0;
  const b1 = 0xe0 | (versionBits << 3) | ((spec.layerBits ?? 1) << 1) | 1; // no CRC
  const b2 = ((spec.bitrateIndex ?? 9) << 4) | ((spec.sampleRateIndex ?? 0) << 2) | (spec.padding ? 2 : 0);
  const b3 = spec.mono ? 0xc0 : 0x00;
  const length = mp3FrameLength(spec);
  const frame = new Array<number>(length).fill(0);
  frame.splice(0, 4, 0xff, b1, b2, b3);
  payload.forEach((b, i) => (frame[4 + i] = b));
  return frame;
}

/** The side-information size after a frame header: where a Xing tag goes. */
function sideInfoSize(spec: Mp3FrameSpec): number {
  return (spec.version ?? "1") === "1" ? (spec.mono ? 17 : 32) : spec.mono ? 9 : 17;
}

/** A Xing/Info frame declaring `frames` audio frames (or no count when `frames` is null). */
export function xingFrame(spec: Mp3FrameSpec, frames: number | null, tag: "Xing" | "Info" = "Info"): number[] {
  const payload = new Array<number>(sideInfoSize(spec)).fill(0);
  payload.push(...text(tag), ...be32(frames === null ? 0 : 1), ...(frames === null ? [] : be32(frames)));
  return mp3Frame(spec, payload);
}

/** A VBRI frame (Fraunhofer) declaring `frames` audio frames: the tag sits 32 bytes after the header. */
export function vbriFrame(spec: Mp3FrameSpec, frames: number): number[] {
  const payload = new Array<number>(32).fill(0);
  payload.push(...text("VBRI"), 0, 1, 0, 0, 0, 75, ...be32(0), ...be32(frames));
  return mp3Frame(spec, payload);
}

/** An ID3v2.4 tag of `size` body bytes (filled with 0xFF, which would look like frame syncs if not skipped). */
export function id3v2Tag(size: number): number[] {
  const synchsafe = [(size >> 21) & 0x7f, (size >> 14) & 0x7f, (size >> 7) & 0x7f, size & 0x7f];
  return [...text("ID3"), 4, 0, 0, ...synchsafe, ...new Array<number>(size).fill(0xff)];
}

/** A 128-byte ID3v1 tag. */
export function id3v1Tag(): number[] {
  return [...text("TAG"), ...new Array<number>(125).fill(0x20)];
}

/** `count` identical frames. */
export function mp3Frames(count: number, spec: Mp3FrameSpec = {}): number[] {
  const frame = mp3Frame(spec);
  const out: number[] = [];
  for (let i = 0; i < count; i++) out.push(...frame);
  return out;
}

/** Deterministic pseudo-random bytes (xorshift32), so a "garbage" test is the same garbage every run. */
export function garbage(length: number, seed = 0x9e3779b9): Uint8Array {
  const out = new Uint8Array(length);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}
