/**
 * Measures uploaded audio instead of trusting the client: a pure parser of WAV (RIFF/WAVE) and MP3
 * (MPEG-1/2/2.5 Layer III) that returns the duration, sample rate and channel count, or refuses a
 * file that is not what it claims to be. Nothing is decoded; only headers and frame boundaries are read.
 *
 * WAV: the RIFF chunks are walked one by one (odd-sized chunks are followed by a pad byte), `fmt `
 * must describe an encoding the media engines play (PCM 8/16-bit, μ-law, A-law), its byte rate and
 * block size must agree with each other, and `data` must lie wholly inside the file. Duration is the
 * data size over the byte rate.
 *
 * MP3: an ID3v2 tag is skipped, the first frame must be confirmed by the frames that follow it (so a
 * stray 0xFFE sync in garbage does not count), and the duration comes from a Xing/Info or VBRI header
 * when one is present and plausible for the file's size, otherwise from walking every frame.
 */

/** The audio formats an upload may declare. */
export type AudioFormat = "wav" | "mp3";

/** What a probe measured. */
export interface AudioInfo {
  format: AudioFormat;
  /** Whole milliseconds, rounded to the nearest. */
  duration_ms: number;
  /** Samples per second per channel. */
  sample_rate: number;
  channels: number;
}

/** The file is not valid audio of the declared format; `message` says why, for the uploader. */
export class AudioProbeError extends Error {
  override name = "AudioProbeError";
}

/**
 * Measures `bytes` as audio of `format`. Throws AudioProbeError when they are not.
 * @example probeAudio(await Bun.file("hello.wav").bytes(), "wav") // { format: "wav", duration_ms: 1520, sample_rate: 16000, channels: 1 }
 */
export function probeAudio(bytes: Uint8Array, format: AudioFormat): AudioInfo {
  return format === "wav" ? probeWav(bytes) : probeMp3(bytes);
}

// ---------------------------------------------------------------------------------------------------
// WAV

const WAVE_FORMAT = { PCM: 0x0001, ALAW: 0x0006, MULAW: 0x0007, EXTENSIBLE: 0xfffe } as const;

const WAVE_FORMAT_NAMES: Record<number, string> = {
  0x0002: "Microsoft ADPCM",
  0x0003: "IEEE float",
  0x0011: "IMA ADPCM",
  0x0031: "GSM 6.10",
  0x0055: "MPEG Layer III",
};

// The tail every KSDATAFORMAT_SUBTYPE_* GUID shares after its two-byte format code.
const EXTENSIBLE_GUID_TAIL = [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71];

const MAX_CHANNELS = 8;
const MIN_SAMPLE_RATE = 1000;
const MAX_SAMPLE_RATE = 384_000;

interface WavFormat {
  code: number;
  channels: number;
  sampleRate: number;
  byteRate: number;
  blockAlign: number;
  bitsPerSample: number;
}

function wavError(reason: string): AudioProbeError {
  return new AudioProbeError(`not a valid WAV file: ${reason}`);
}

function ascii(bytes: Uint8Array, offset: number, length: number): string {
  let out = "";
  for (let i = 0; i < length; i++) out += String.fromCharCode(bytes[offset + i]!);
  return out;
}

function isChunkId(bytes: Uint8Array, offset: number): boolean {
  for (let i = 0; i < 4; i++) {
    const c = bytes[offset + i]!;
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

/** Measures a RIFF/WAVE file. */
export function probeWav(bytes: Uint8Array): AudioInfo {
  if (bytes.length === 0) throw wavError("the file is empty.");
  if (bytes.length < 12 || ascii(bytes, 0, 4) !== "RIFF" || ascii(bytes, 8, 4) !== "WAVE") {
    throw wavError(`it does not start with a RIFF/WAVE header.${looksLikeMp3(bytes) ? " It looks like an MP3 file: upload it with format=mp3." : ""}`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const riffSize = view.getUint32(4, true);
  const riffEnd = riffSize + 8;
  // Bytes after the RIFF chunk (some tools append a tag) are ignored; a RIFF size past the end of the
  // file means the file was cut short or the header lies (a placeholder left by a streaming writer).
  if (riffEnd > bytes.length) {
    throw wavError(`the RIFF header says ${riffEnd} bytes but the file has ${bytes.length}; it is truncated or was written without final sizes.`);
  }
  let fmt: WavFormat | null = null;
  let dataSize: number | null = null;
  let offset = 12;
  while (offset < riffEnd) {
    if (riffEnd - offset < 8) throw wavError(`${riffEnd - offset} stray bytes at offset ${offset} where a chunk header should be.`);
    if (!isChunkId(bytes, offset)) throw wavError(`the chunk at offset ${offset} has no valid id; the file is corrupt.`);
    const id = ascii(bytes, offset, 4);
    const size = view.getUint32(offset + 4, true);
    const body = offset + 8;
    if (body + size > riffEnd) {
      throw wavError(`the '${id.trim()}' chunk at offset ${offset} says ${size} bytes but only ${riffEnd - body} remain; the file is truncated.`);
    }
    if (id === "fmt ") {
      if (fmt) throw wavError("it has more than one 'fmt ' chunk.");
      fmt = readWavFormat(view, body, size);
    } else if (id === "data") {
      if (dataSize !== null) throw wavError("it has more than one 'data' chunk.");
      if (!fmt) throw wavError("the 'data' chunk comes before the 'fmt ' chunk.");
      dataSize = size;
    }
    // Chunks are word-aligned: an odd size is followed by one pad byte (absent only at the very end).
    offset = body + size + (size % 2);
  }
  if (!fmt) throw wavError("it has no 'fmt ' chunk.");
  if (dataSize === null) throw wavError("it has no 'data' chunk.");
  if (dataSize === 0) throw wavError("the 'data' chunk is empty: there is no audio.");
  if (dataSize % fmt.blockAlign !== 0) {
    throw wavError(`the 'data' chunk (${dataSize} bytes) is not a whole number of ${fmt.blockAlign}-byte sample frames; the file is truncated.`);
  }
  return {
    format: "wav",
    duration_ms: Math.round((dataSize * 1000) / fmt.byteRate),
    sample_rate: fmt.sampleRate,
    channels: fmt.channels,
  };
}

function readWavFormat(view: DataView, offset: number, size: number): WavFormat {
  if (size < 16) throw wavError(`the 'fmt ' chunk is ${size} bytes; at least 16 are needed.`);
  let code = view.getUint16(offset, true);
  const channels = view.getUint16(offset + 2, true);
  const sampleRate = view.getUint32(offset + 4, true);
  const byteRate = view.getUint32(offset + 8, true);
  const blockAlign = view.getUint16(offset + 12, true);
  const bitsPerSample = view.getUint16(offset + 14, true);
  if (code === WAVE_FORMAT.EXTENSIBLE) {
    if (size < 40 || view.getUint16(offset + 16, true) < 22) throw wavError("the WAVE_FORMAT_EXTENSIBLE 'fmt ' chunk is too short.");
    const guid = offset + 24;
    code = view.getUint16(guid, true);
    for (let i = 0; i < EXTENSIBLE_GUID_TAIL.length; i++) {
      if (view.getUint8(guid + 2 + i) !== EXTENSIBLE_GUID_TAIL[i]) throw wavError("the WAVE_FORMAT_EXTENSIBLE sub-format is not a known encoding.");
    }
  }
  const supported =
    (code === WAVE_FORMAT.PCM && (bitsPerSample === 8 || bitsPerSample === 16)) ||
    ((code === WAVE_FORMAT.MULAW || code === WAVE_FORMAT.ALAW) && bitsPerSample === 8);
  if (!supported) {
    const name =
      code === WAVE_FORMAT.PCM
        ? `${bitsPerSample}-bit PCM`
        : code === WAVE_FORMAT.MULAW || code === WAVE_FORMAT.ALAW
          ? `${bitsPerSample}-bit ${code === WAVE_FORMAT.MULAW ? "μ-law" : "A-law"}`
          : `${WAVE_FORMAT_NAMES[code] ?? "encoding"} (format 0x${code.toString(16).padStart(4, "0")})`;
    throw new AudioProbeError(`unsupported WAV encoding ${name}: use 16-bit or 8-bit PCM, μ-law or A-law.`);
  }
  if (channels < 1 || channels > MAX_CHANNELS) throw wavError(`the 'fmt ' chunk says ${channels} channels (1–${MAX_CHANNELS} allowed).`);
  if (sampleRate < MIN_SAMPLE_RATE || sampleRate > MAX_SAMPLE_RATE) throw wavError(`the sample rate ${sampleRate} Hz is out of range.`);
  const expectedAlign = (channels * bitsPerSample) / 8;
  if (blockAlign !== expectedAlign) throw wavError(`the block size ${blockAlign} does not match ${channels} channel(s) of ${bitsPerSample} bits.`);
  if (byteRate !== sampleRate * blockAlign) {
    throw wavError(`the byte rate ${byteRate} does not match ${sampleRate} Hz × ${blockAlign} bytes per frame.`);
  }
  return { code, channels, sampleRate, byteRate, blockAlign, bitsPerSample };
}

// ---------------------------------------------------------------------------------------------------
// MP3

/** kbps by bitrate index, Layer III. Index 0 (free format) and 15 (bad) are refused. */
const BITRATES_V1_L3 = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320];
const BITRATES_V2_L3 = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160];
/** Hz by version bits (0 = MPEG-2.5, 2 = MPEG-2, 3 = MPEG-1) and sample-rate index. */
const SAMPLE_RATES: Record<number, number[]> = { 0: [11025, 12000, 8000], 2: [22050, 24000, 16000], 3: [44100, 48000, 32000] };

/** Bytes of leading junk (after any ID3v2 tag) searched for the first frame. */
const MAX_LEADING_JUNK = 64 * 1024;
/** Frames that must follow a candidate first frame, with the same stream parameters, to accept it. */
const CONFIRMING_FRAMES = 2;

interface FrameHeader {
  /** 3 = MPEG-1, 2 = MPEG-2, 0 = MPEG-2.5. */
  version: number;
  sampleRate: number;
  sampleRateIndex: number;
  channels: 1 | 2;
  hasCrc: boolean;
  /** Bytes, header included. */
  length: number;
  samplesPerFrame: number;
}

function mp3Error(reason: string): AudioProbeError {
  return new AudioProbeError(`not a valid MP3 file: ${reason}`);
}

/** The Layer III frame header at `offset`, or null when there is none. */
function frameHeaderAt(bytes: Uint8Array, offset: number): FrameHeader | null {
  if (offset + 4 > bytes.length) return null;
  const b1 = bytes[offset + 1]!;
  const b2 = bytes[offset + 2]!;
  const b3 = bytes[offset + 3]!;
  if (bytes[offset] !== 0xff || (b1 & 0xe0) !== 0xe0) return null;
  const version = (b1 >> 3) & 3;
  const layer = (b1 >> 1) & 3;
  if (version === 1 || layer !== 1) return null; // reserved version; only Layer III (bits 01)
  const bitrateIndex = b2 >> 4;
  const sampleRateIndex = (b2 >> 2) & 3;
  if (bitrateIndex === 0 || bitrateIndex === 15 || sampleRateIndex === 3) return null;
  if ((b3 & 3) === 2) return null; // reserved emphasis
  const sampleRate = SAMPLE_RATES[version]![sampleRateIndex]!;
  const kbps = (version === 3 ? BITRATES_V1_L3 : BITRATES_V2_L3)[bitrateIndex]!;
  const padding = (b2 >> 1) & 1;
  const length = Math.floor(((version === 3 ? 144_000 : 72_000) * kbps) / sampleRate) + padding;
  return {
    version,
    sampleRate,
    sampleRateIndex,
    channels: (b3 >> 6) === 3 ? 1 : 2,
    hasCrc: (b1 & 1) === 0,
    length,
    samplesPerFrame: version === 3 ? 1152 : 576,
  };
}

function sameStream(a: FrameHeader, b: FrameHeader): boolean {
  return a.version === b.version && a.sampleRateIndex === b.sampleRateIndex && a.channels === b.channels;
}

/** Where trailing tags (ID3v1, APEv2, Lyrics3) begin, so the frame walk stops there. */
function audioEnd(bytes: Uint8Array, start: number): number {
  let end = bytes.length;
  if (end - start >= 128 && ascii(bytes, end - 128, 3) === "TAG") end -= 128;
  // An APEv2 footer: "APETAGEX", version, tag size (footer and items, header excluded), flags.
  if (end - start >= 32 && ascii(bytes, end - 32, 8) === "APETAGEX") {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const tagSize = view.getUint32(end - 32 + 12, true);
    const hasHeader = (view.getUint32(end - 32 + 20, true) & 0x80000000) !== 0;
    const total = tagSize + (hasHeader ? 32 : 0);
    if (total <= end - start) end -= total;
  }
  return end;
}

/**
 * True when a frame starts at `offset` and is followed by CONFIRMING_FRAMES more of the same stream,
 * or by the end of the audio (a file of one or two frames).
 */
function isConfirmedFrame(bytes: Uint8Array, offset: number, end: number): FrameHeader | null {
  const first = frameHeaderAt(bytes, offset);
  if (!first) return null;
  let at = offset + first.length;
  for (let i = 0; i < CONFIRMING_FRAMES; i++) {
    // Reaching the end confirms, and so does a later frame running past it (a cut-short last frame);
    // a candidate that itself runs past the end confirms nothing.
    if (at >= end) return at === end || i > 0 ? first : null;
    const next = frameHeaderAt(bytes, at);
    if (!next || !sameStream(first, next)) return null;
    at += next.length;
  }
  return first;
}

/** The next confirmed frame at or after `from` (and before `limit`), or -1. */
function findFrame(bytes: Uint8Array, from: number, limit: number, end: number): number {
  for (let i = from; i < limit && i + 4 <= end; i++) {
    if (bytes[i] === 0xff && isConfirmedFrame(bytes, i, end)) return i;
  }
  return -1;
}

/** Frame count from a Xing/Info or VBRI header inside the frame at `offset`, when one is there. */
function vbrHeaderFrames(bytes: Uint8Array, offset: number, header: FrameHeader): number | null {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const sideInfo = header.version === 3 ? (header.channels === 1 ? 17 : 32) : header.channels === 1 ? 9 : 17;
  // Encoders put the Xing tag right after the side info; some count the CRC before it, some do not.
  const candidates = header.hasCrc ? [offset + 4 + sideInfo, offset + 6 + sideInfo] : [offset + 4 + sideInfo];
  for (const at of candidates) {
    if (at + 12 > offset + header.length) continue;
    const tag = ascii(bytes, at, 4);
    if (tag !== "Xing" && tag !== "Info") continue;
    const flags = view.getUint32(at + 4, false);
    if ((flags & 1) === 0) return -1; // a VBR header without a frame count: walk the frames instead
    return view.getUint32(at + 8, false);
  }
  const vbri = offset + 4 + 32;
  if (vbri + 18 <= offset + header.length && ascii(bytes, vbri, 4) === "VBRI") return view.getUint32(vbri + 14, false);
  return null;
}

/** The length after the ID3v2 tag(s) at the start of the file. */
function skipId3v2(bytes: Uint8Array): number {
  let offset = 0;
  while (offset + 10 <= bytes.length && ascii(bytes, offset, 3) === "ID3") {
    const major = bytes[offset + 3]!;
    const sizeBytes = [bytes[offset + 6]!, bytes[offset + 7]!, bytes[offset + 8]!, bytes[offset + 9]!];
    if (major === 0xff || bytes[offset + 4] === 0xff || sizeBytes.some((b) => b >= 0x80)) throw mp3Error("its ID3v2 tag header is malformed.");
    const size = (sizeBytes[0]! << 21) | (sizeBytes[1]! << 14) | (sizeBytes[2]! << 7) | sizeBytes[3]!;
    const footer = (bytes[offset + 5]! & 0x10) !== 0 ? 10 : 0;
    offset += 10 + size + footer;
    if (offset > bytes.length) throw mp3Error("its ID3v2 tag runs past the end of the file; the file is truncated.");
  }
  return offset;
}

/** Measures an MPEG Layer III file. */
export function probeMp3(bytes: Uint8Array): AudioInfo {
  if (bytes.length === 0) throw mp3Error("the file is empty.");
  if (bytes.length >= 12 && ascii(bytes, 0, 4) === "RIFF" && ascii(bytes, 8, 4) === "WAVE") {
    throw mp3Error("it is a WAV file: upload it with format=wav.");
  }
  const start = skipId3v2(bytes);
  const end = audioEnd(bytes, start);
  const first = findFrame(bytes, start, Math.min(end, start + MAX_LEADING_JUNK), end);
  if (first < 0) throw mp3Error("no MPEG Layer III frame sync was found.");
  const head = frameHeaderAt(bytes, first)!;

  const declared = vbrHeaderFrames(bytes, first, head);
  const info = (frames: number): AudioInfo => ({
    format: "mp3",
    duration_ms: Math.round((frames * head.samplesPerFrame * 1000) / head.sampleRate),
    sample_rate: head.sampleRate,
    channels: head.channels,
  });
  if (declared !== null && declared > 0) {
    // A VBR header is a claim: believe it only when the file is big enough to hold that many frames
    // of the smallest size this stream can have, and small enough that frames of the largest size
    // would not leave much of it unaccounted for.
    const coefficient = head.version === 3 ? 144_000 : 72_000;
    const minFrame = Math.floor((coefficient * (head.version === 3 ? 32 : 8)) / head.sampleRate);
    const maxFrame = Math.floor((coefficient * (head.version === 3 ? 320 : 160)) / head.sampleRate) + 1;
    const room = end - (first + head.length);
    if (declared <= Math.ceil(room / minFrame) && declared * maxFrame >= room * 0.9) return info(declared);
  }

  // Walk every frame. The VBR header frame, if any, is silence: not counted.
  let frames = 0;
  let junk = 0;
  let offset = first;
  if (declared !== null) offset += head.length;
  while (offset < end) {
    const header = frameHeaderAt(bytes, offset);
    if (header && sameStream(head, header)) {
      if (offset + header.length > end) break; // the last frame is cut short: not counted
      frames++;
      offset += header.length;
      continue;
    }
    const next = findFrame(bytes, offset + 1, end, end);
    if (next < 0) {
      junk += end - offset;
      break;
    }
    junk += next - offset;
    offset = next;
  }
  if (frames === 0) throw mp3Error("it holds no complete audio frame.");
  const region = end - first;
  if (junk > Math.max(4096, region / 10)) throw mp3Error(`${junk} of its ${region} bytes are not MPEG audio frames.`);
  return info(frames);
}

function looksLikeMp3(bytes: Uint8Array): boolean {
  if (bytes.length >= 3 && ascii(bytes, 0, 3) === "ID3") return true;
  return frameHeaderAt(bytes, 0) !== null;
}
