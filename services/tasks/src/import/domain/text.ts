import { fileError } from './plan.ts';

/**
 * A file's bytes as text. Every format read here is Unicode: UTF-8 (with or without a byte-order
 * mark) or UTF-16 with its mark. Anything else — a legacy code page, UTF-16 without a mark, bytes
 * that are not text — is refused with the place where it stops being UTF-8, rather than guessed
 * (a wrong guess would import garbled titles without anyone noticing).
 */
export function decodeText(file: string, bytes: Uint8Array): string {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return utf8(file, bytes.subarray(3));
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return strict(file, 'utf-16le', bytes.subarray(2));
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return strict(file, 'utf-16be', bytes.subarray(2));
  return utf8(file, bytes);
}

function strict(file: string, encoding: string, bytes: Uint8Array): string {
  try {
    return new TextDecoder(encoding, { fatal: true }).decode(bytes);
  } catch {
    throw fileError({ file, row: null, field: null }, `the file is not valid ${encoding.toUpperCase()} text`);
  }
}

function utf8(file: string, bytes: Uint8Array): string {
  const bad = firstInvalidUtf8(bytes);
  if (bad !== -1) {
    const line = countLines(bytes, bad);
    throw fileError({ file, row: line, field: null }, `unknown text encoding: byte 0x${bytes[bad]!.toString(16).padStart(2, '0')} at offset ${bad} is not UTF-8 (save or export the file as UTF-8)`);
  }
  const text = new TextDecoder('utf-8').decode(bytes);
  const nul = text.indexOf('\u0000');
  if (nul !== -1) {
    throw fileError({ file, row: text.slice(0, nul).split('\n').length, field: null }, 'unknown text encoding: the file holds NUL characters (UTF-16 without a byte-order mark, or not a text file)');
  }
  return text;
}

/** Offset of the first byte that breaks UTF-8, or -1. */
function firstInvalidUtf8(b: Uint8Array): number {
  let i = 0;
  while (i < b.length) {
    const c = b[i]!;
    if (c < 0x80) {
      i++;
      continue;
    }
    const n = c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xf0 && c <= 0xf4 ? 3 : -1;
    if (n === -1) return i;
    for (let k = 1; k <= n; k++) if (i + k >= b.length || (b[i + k]! & 0xc0) !== 0x80) return i;
    // overlong three-byte forms, surrogates, and code points past U+10FFFF
    const c1 = b[i + 1]!;
    if ((c === 0xe0 && c1 < 0xa0) || (c === 0xed && c1 > 0x9f) || (c === 0xf0 && c1 < 0x90) || (c === 0xf4 && c1 > 0x8f)) return i;
    i += n + 1;
  }
  return -1;
}

/** The 1-based line of a byte offset. */
function countLines(b: Uint8Array, upTo: number): number {
  let line = 1;
  for (let i = 0; i < upTo && i < b.length; i++) if (b[i] === 0x0a) line++;
  return line;
}
