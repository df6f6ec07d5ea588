/** The audio probe on files synthesized in code (and one espeak-ng render when the tool is installed). */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AudioProbeError, probeAudio, probeMp3, probeWav } from "./audio-probe.ts";
import {
  buildWav,
  garbage,
  id3v1Tag,
  id3v2Tag,
  mp3Frame,
  mp3FrameLength,
  mp3Frames,
  riffChunk,
  vbriFrame,
  xingFrame,
} from "./audio-fixtures.ts";

const bytes = (parts: number[]) => new Uint8Array(parts);

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(AudioProbeError);
    return (error as Error).message;
  }
  throw new Error("expected the probe to refuse the file");
}

describe("probeWav: measures", () => {
  test("8 kHz μ-law: duration is samples / 8000, exactly", () => {
    expect(probeWav(buildWav({ code: 7, sampleRate: 8000, frames: 8000 }))).toEqual({ format: "wav", duration_ms: 1000, sample_rate: 8000, channels: 1 });
    // 12345 samples = 1543.125 ms, rounded to the nearest millisecond.
    expect(probeWav(buildWav({ code: 7, sampleRate: 8000, frames: 12345 })).duration_ms).toBe(1543);
    expect(probeWav(buildWav({ code: 7, sampleRate: 8000, frames: 12 })).duration_ms).toBe(2); // 1.5 ms rounds up
  });

  test("16 kHz 16-bit PCM mono and stereo", () => {
    expect(probeWav(buildWav({ code: 1, sampleRate: 16000, bitsPerSample: 16, frames: 40000 }))).toEqual({
      format: "wav",
      duration_ms: 2500,
      sample_rate: 16000,
      channels: 1,
    });
    const stereo = probeWav(buildWav({ code: 1, sampleRate: 16000, channels: 2, frames: 24000 }));
    expect(stereo).toEqual({ format: "wav", duration_ms: 1500, sample_rate: 16000, channels: 2 });
  });

  test("A-law, 8-bit PCM and WAVE_FORMAT_EXTENSIBLE PCM", () => {
    expect(probeWav(buildWav({ code: 6, sampleRate: 8000, frames: 4000 })).duration_ms).toBe(500);
    expect(probeWav(buildWav({ code: 1, bitsPerSample: 8, sampleRate: 11025, frames: 11025 })).duration_ms).toBe(1000);
    expect(probeWav(buildWav({ code: 1, sampleRate: 48000, channels: 2, frames: 4800, extensible: true }))).toEqual({
      format: "wav",
      duration_ms: 100,
      sample_rate: 48000,
      channels: 2,
    });
  });

  test("walks other chunks, including odd-sized ones and their pad byte", () => {
    const list = riffChunk("LIST", [...new TextEncoder().encode("INFOabc")]); // 7 bytes + pad
    const odd = riffChunk("junk", [1, 2, 3]);
    const wav = buildWav({ code: 7, frames: 800, extraChunks: [list, odd] });
    expect(probeWav(wav).duration_ms).toBe(100);
    // 8-bit mono with an odd number of samples: the data chunk itself ends with a pad byte.
    expect(probeWav(buildWav({ code: 7, frames: 801 })).duration_ms).toBe(100);
  });

  test("bytes after the RIFF chunk (an appended tag) are ignored", () => {
    const wav = buildWav({ code: 7, frames: 800 });
    const withTail = new Uint8Array([...wav, ...riffChunk("id3 ", [1, 2, 3, 4])]);
    expect(probeWav(withTail).duration_ms).toBe(100);
  });
});

describe("probeWav: refuses", () => {
  test("empty, garbage and non-WAVE RIFF", () => {
    expect(refusal(() => probeWav(new Uint8Array()))).toContain("not a valid WAV file");
    expect(refusal(() => probeWav(garbage(5000)))).toMatch(/^not a valid WAV file: it does not start with a RIFF\/WAVE header/);
    const avi = buildWav({ frames: 10 });
    avi.set([0x41, 0x56, 0x49, 0x20], 8); // "AVI "
    expect(refusal(() => probeWav(avi))).toContain("RIFF/WAVE header");
  });

  test("an MP3 sent as WAV gets a hint", () => {
    expect(refusal(() => probeWav(bytes(mp3Frames(5))))).toContain("upload it with format=mp3");
  });

  test("a truncated file: the RIFF size, or the data size, runs past the end", () => {
    const wav = buildWav({ code: 7, frames: 8000 });
    expect(refusal(() => probeWav(wav.subarray(0, wav.length - 100)))).toMatch(/RIFF header says \d+ bytes but the file has \d+/);
    const lyingData = buildWav({ code: 7, frames: 8000, dataSize: 9000 });
    expect(refusal(() => probeWav(lyingData))).toMatch(/'data' chunk at offset \d+ says 9000 bytes/);
    // A streaming writer's placeholder sizes are a lie too.
    expect(refusal(() => probeWav(buildWav({ code: 7, frames: 100, riffSize: 0xffffffff })))).toContain("written without final sizes");
    expect(refusal(() => probeWav(buildWav({ code: 7, frames: 100, dataSize: 0xffffffff })))).toContain("truncated");
  });

  test("a missing pad byte after an odd chunk misaligns the walk: refused as corrupt", () => {
    const wav = buildWav({ code: 7, frames: 800, extraChunks: [riffChunk("junk", [1, 2, 3], false)] });
    // The walk lands one byte late, reads "ata " as an id and a size far past the end.
    expect(refusal(() => probeWav(wav))).toMatch(/^not a valid WAV file: the 'ata' chunk at offset 48 says \d+ bytes but only 799 remain/);
  });

  test("header fields that contradict each other", () => {
    expect(refusal(() => probeWav(buildWav({ code: 1, sampleRate: 16000, frames: 100, byteRate: 16000 })))).toContain("byte rate 16000 does not match");
    expect(refusal(() => probeWav(buildWav({ code: 1, sampleRate: 16000, frames: 100, blockAlign: 4 })))).toContain("block size 4");
    expect(refusal(() => probeWav(buildWav({ code: 7, frames: 100, channels: 0 })))).toContain("0 channels");
    expect(refusal(() => probeWav(buildWav({ code: 7, frames: 100, sampleRate: 10 })))).toContain("sample rate 10 Hz");
  });

  test("a data size that is not whole sample frames", () => {
    const wav = buildWav({ code: 1, bitsPerSample: 16, frames: 100, dataSize: 199 });
    // 199 bytes of 16-bit audio: the pad byte after it is the 200th byte written, so the walk ends cleanly.
    expect(refusal(() => probeWav(wav))).toBe(
      "not a valid WAV file: the 'data' chunk (199 bytes) is not a whole number of 2-byte sample frames; the file is truncated.",
    );
  });

  test("encodings the media engines do not play", () => {
    expect(refusal(() => probeWav(buildWav({ code: 0x11, bitsPerSample: 4, frames: 100, blockAlign: 256, byteRate: 4055 })))).toBe(
      "unsupported WAV encoding IMA ADPCM (format 0x0011): use 16-bit or 8-bit PCM, μ-law or A-law.",
    );
    expect(refusal(() => probeWav(buildWav({ code: 1, bitsPerSample: 24, frames: 100 })))).toContain("unsupported WAV encoding 24-bit PCM");
    expect(refusal(() => probeWav(buildWav({ code: 3, bitsPerSample: 32, frames: 100 })))).toContain("IEEE float");
    expect(refusal(() => probeWav(buildWav({ code: 7, bitsPerSample: 16, frames: 100 })))).toContain("16-bit μ-law");
  });

  test("missing, misplaced, duplicate or empty chunks", () => {
    const noData = new Uint8Array([...buildWav({ code: 7, frames: 0 })]);
    expect(refusal(() => probeWav(noData))).toContain("'data' chunk is empty");
    const fmtOnly = (() => {
      const wav = buildWav({ code: 7, frames: 0 });
      const withoutData = wav.subarray(0, wav.length - 8);
      const copy = new Uint8Array(withoutData);
      new DataView(copy.buffer).setUint32(4, copy.length - 8, true);
      return copy;
    })();
    expect(refusal(() => probeWav(fmtOnly))).toContain("no 'data' chunk");
    const dataFirst = new Uint8Array([0x52, 0x49, 0x46, 0x46, ...[0, 0, 0, 0], ...new TextEncoder().encode("WAVE"), ...riffChunk("data", [0xff, 0xff])]);
    new DataView(dataFirst.buffer).setUint32(4, dataFirst.length - 8, true);
    expect(refusal(() => probeWav(dataFirst))).toContain("'data' chunk comes before the 'fmt ' chunk");
    const twoData = buildWav({ code: 7, frames: 10, extraChunks: [riffChunk("data", [0xff, 0xff])] });
    expect(refusal(() => probeWav(twoData))).toContain("more than one 'data' chunk");
  });
});

describe("probeMp3: measures", () => {
  const frame44 = mp3FrameLength(); // MPEG-1 128 kbps 44.1 kHz: 417 bytes

  test("CBR MPEG-1 by walking every frame", () => {
    expect(frame44).toBe(417);
    // 100 frames × 1152 samples / 44100 Hz = 2612.24 ms
    expect(probeMp3(bytes(mp3Frames(100)))).toEqual({ format: "mp3", duration_ms: 2612, sample_rate: 44100, channels: 2 });
  });

  test("MPEG-2 and MPEG-2.5 (576 samples per frame), mono", () => {
    // MPEG-2 16 kHz, 64 kbps: 288-byte frames of 36 ms.
    const v2 = mp3Frames(50, { version: "2", sampleRateIndex: 2, bitrateIndex: 8, mono: true });
    expect(probeMp3(bytes(v2))).toEqual({ format: "mp3", duration_ms: 1800, sample_rate: 16000, channels: 1 });
    // MPEG-2.5 8 kHz, 8 kbps: 72-byte frames of 72 ms.
    const v25 = mp3Frames(25, { version: "2.5", sampleRateIndex: 2, bitrateIndex: 1, mono: true });
    expect(probeMp3(bytes(v25))).toEqual({ format: "mp3", duration_ms: 1800, sample_rate: 8000, channels: 1 });
  });

  test("VBR: frames of different bitrates and padding are all counted", () => {
    const parts: number[] = [];
    for (let i = 0; i < 30; i++) parts.push(...mp3Frame({ bitrateIndex: 1 + (i % 14), padding: i % 3 === 0 }));
    expect(probeMp3(bytes(parts)).duration_ms).toBe(Math.round((30 * 1152 * 1000) / 44100));
  });

  test("skips an ID3v2 tag (whose 0xFF bytes would look like syncs) and a trailing ID3v1 tag", () => {
    const file = bytes([...id3v2Tag(3000), ...mp3Frames(100), ...id3v1Tag()]);
    expect(probeMp3(file).duration_ms).toBe(2612);
  });

  test("a Xing/Info header gives the frame count without walking", () => {
    const spec = {};
    const file = bytes([...xingFrame(spec, 100), ...mp3Frames(100)]);
    expect(probeMp3(file).duration_ms).toBe(2612);
    const xing = bytes([...xingFrame({ mono: true }, 40, "Xing"), ...mp3Frames(40, { mono: true })]);
    expect(probeMp3(xing)).toEqual({ format: "mp3", duration_ms: Math.round((40 * 1152 * 1000) / 44100), sample_rate: 44100, channels: 1 });
  });

  test("a VBRI header gives the frame count", () => {
    const file = bytes([...vbriFrame({}, 100), ...mp3Frames(100)]);
    expect(probeMp3(file).duration_ms).toBe(2612);
  });

  test("a lying Xing header is not believed: the frames are walked", () => {
    // Claims a million frames in 42 kB; claims one frame where there are 100.
    expect(probeMp3(bytes([...xingFrame({}, 1_000_000), ...mp3Frames(100)])).duration_ms).toBe(2612);
    expect(probeMp3(bytes([...xingFrame({}, 1), ...mp3Frames(100)])).duration_ms).toBe(2612);
  });

  test("a Xing header without a frame count: walked, the header frame itself not counted", () => {
    expect(probeMp3(bytes([...xingFrame({}, null), ...mp3Frames(100)])).duration_ms).toBe(2612);
  });

  test("a little leading junk, junk between frames, and a cut-short last frame", () => {
    expect(probeMp3(bytes([0, 0, 0, 0, ...mp3Frames(100)])).duration_ms).toBe(2612);
    const withGap = [...mp3Frames(50), 1, 2, 3, ...mp3Frames(50)];
    expect(probeMp3(bytes(withGap)).duration_ms).toBe(2612);
    const cut = [...mp3Frames(101)].slice(0, 101 * frame44 - 100);
    expect(probeMp3(bytes(cut)).duration_ms).toBe(2612);
  });

  test("a single whole frame is a (very short) valid file", () => {
    expect(probeMp3(bytes(mp3Frame())).duration_ms).toBe(26);
  });
});

describe("probeMp3: refuses", () => {
  test("empty and garbage: no frame sync", () => {
    expect(refusal(() => probeMp3(new Uint8Array()))).toBe("not a valid MP3 file: the file is empty.");
    for (const seed of [1, 2, 3, 0xdeadbeef]) {
      expect(refusal(() => probeMp3(garbage(200_000, seed)))).toBe("not a valid MP3 file: no MPEG Layer III frame sync was found.");
    }
    expect(refusal(() => probeMp3(new TextEncoder().encode("hello, this is plain text")))).toContain("no MPEG Layer III frame sync");
  });

  test("a lone header, or a frame cut short, is no audio", () => {
    expect(refusal(() => probeMp3(bytes(mp3Frame().slice(0, 4))))).toContain("no MPEG Layer III frame sync");
    expect(refusal(() => probeMp3(bytes(mp3Frame().slice(0, 200))))).toContain("no MPEG Layer III frame sync");
  });

  test("Layer I/II streams are not Layer III", () => {
    expect(refusal(() => probeMp3(bytes(mp3Frames(20, { layerBits: 2 }))))).toContain("no MPEG Layer III frame sync");
  });

  test("a few frames drowned in garbage", () => {
    const file = bytes([...mp3Frames(5), ...garbage(50_000)]);
    expect(refusal(() => probeMp3(file))).toMatch(/bytes are not MPEG audio frames/);
  });

  test("an ID3v2 tag that runs past the end", () => {
    const tag = id3v2Tag(100);
    expect(refusal(() => probeMp3(bytes(tag.slice(0, 50))))).toContain("ID3v2 tag runs past the end");
  });

  test("a WAV sent as MP3 gets a hint", () => {
    expect(refusal(() => probeMp3(buildWav({ code: 7, frames: 100 })))).toBe("not a valid MP3 file: it is a WAV file: upload it with format=wav.");
  });
});

describe("probeAudio", () => {
  test("dispatches on the declared format", () => {
    const wav = buildWav({ code: 7, frames: 800 });
    expect(probeAudio(wav, "wav").duration_ms).toBe(100);
    expect(() => probeAudio(wav, "mp3")).toThrow(AudioProbeError);
  });

  const espeak = Bun.which("espeak-ng");
  test.skipIf(!espeak)("a real WAV rendered by espeak-ng", () => {
    const dir = mkdtempSync(join(tmpdir(), "parley-probe-"));
    const path = join(dir, "hello.wav");
    const run = Bun.spawnSync([espeak!, "-w", path, "Hello, thank you for calling. Please hold."]);
    expect(run.exitCode).toBe(0);
    const file = new Uint8Array(readFileSync(path));
    const info = probeWav(file);
    expect(info.format).toBe("wav");
    expect(info.channels).toBe(1);
    expect(info.sample_rate).toBe(22050); // espeak-ng renders 22.05 kHz 16-bit mono
    // Its duration from the data chunk: 16-bit mono bytes / (2 × rate).
    const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
    let offset = 12;
    let dataSize = -1;
    while (offset + 8 <= file.length) {
      const id = String.fromCharCode(...file.subarray(offset, offset + 4));
      const size = view.getUint32(offset + 4, true);
      if (id === "data") {
        dataSize = size;
        break;
      }
      offset += 8 + size + (size % 2);
    }
    expect(info.duration_ms).toBe(Math.round((dataSize * 1000) / (2 * 22050)));
    expect(info.duration_ms).toBeGreaterThan(1000);
    expect(info.duration_ms).toBeLessThan(10_000);
  });
});
