import { createReadStream, createWriteStream, mkdirSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { dirname, join, normalize } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { finished } from 'node:stream/promises';

/**
 * The backup archive is a plain POSIX (ustar) tar, so `tar -tvf` lists it and `tar -xf` unpacks it
 * without this tool. Only regular files with names under 100 bytes are written (all the backup
 * writes), which keeps the writer and reader to the few fields they need.
 */

const BLOCK = 512;

function header(name: string, size: number): Buffer {
  if (Buffer.byteLength(name) >= 100) throw new Error(`tar: name too long: ${name}`);
  const h = Buffer.alloc(BLOCK);
  const field = (offset: number, length: number, value: string) => h.write(value, offset, length, 'utf8');
  const octal = (offset: number, length: number, value: number) => field(offset, length, value.toString(8).padStart(length - 1, '0') + '\0');
  field(0, 100, name);
  octal(100, 8, 0o600);
  octal(108, 8, 0);
  octal(116, 8, 0);
  octal(124, 12, size);
  octal(136, 12, Math.floor(Date.now() / 1000));
  field(148, 8, ' '.repeat(8)); // the checksum is computed with its own field as spaces
  field(156, 1, '0');
  field(257, 6, 'ustar\0');
  field(263, 2, '00');
  let sum = 0;
  for (const b of h) sum += b;
  field(148, 8, sum.toString(8).padStart(6, '0') + '\0 ');
  return h;
}

async function write(out: Writable, chunk: Buffer): Promise<void> {
  if (!out.write(chunk)) await once(out, 'drain');
}

/** Writes `files` (archive name → path on disk) as one tar to `file`. */
export async function writeTar(file: string, files: Array<{ name: string; path: string }>): Promise<void> {
  const out = createWriteStream(file, { mode: 0o600 });
  for (const f of files) {
    const size = statSync(f.path).size;
    await write(out, header(f.name, size));
    for await (const chunk of createReadStream(f.path)) await write(out, chunk as Buffer);
    if (size % BLOCK) await write(out, Buffer.alloc(BLOCK - (size % BLOCK)));
  }
  await write(out, Buffer.alloc(BLOCK * 2));
  out.end();
  await finished(out);
}

/**
 * Unpacks a tar (regular files only) into `dir`; returns the names. Refuses names that would land
 * outside `dir`, and a truncated archive.
 */
export async function readTar(input: Readable, dir: string): Promise<string[]> {
  const names: string[] = [];
  let buf = Buffer.alloc(0);
  let current: { name: string; left: number; pad: number; out: Writable } | undefined;
  let skip = 0;
  let ended = false;
  for await (const chunk of input) {
    buf = Buffer.concat([buf, chunk as Buffer]);
    for (;;) {
      if (current) {
        const n = Math.min(current.left, buf.length);
        if (n > 0) await write(current.out, buf.subarray(0, n));
        buf = buf.subarray(n);
        current.left -= n;
        if (current.left > 0) break;
        current.out.end();
        await finished(current.out);
        skip = current.pad;
        current = undefined;
      }
      if (skip) {
        const n = Math.min(skip, buf.length);
        buf = buf.subarray(n);
        skip -= n;
        if (skip) break;
      }
      if (ended || buf.length < BLOCK) break;
      const h = buf.subarray(0, BLOCK);
      buf = buf.subarray(BLOCK);
      if (h.every((b) => b === 0)) {
        ended = true;
        break;
      }
      const name = h.subarray(0, 100).toString('utf8').replace(/\0.*$/s, '');
      const size = parseInt(h.subarray(124, 136).toString('ascii').replace(/\0.*$/s, '').trim() || '0', 8);
      const type = String.fromCharCode(h[156]!);
      const safe = normalize(name);
      if (safe.startsWith('..') || safe.startsWith('/')) throw new Error(`tar: refusing entry ${name}`);
      if (type !== '0' && type !== '\0') {
        skip = Math.ceil(size / BLOCK) * BLOCK;
        continue;
      }
      mkdirSync(dirname(join(dir, safe)), { recursive: true });
      current = { name: safe, left: size, pad: (BLOCK - (size % BLOCK)) % BLOCK, out: createWriteStream(join(dir, safe), { mode: 0o600 }) };
      names.push(safe);
    }
  }
  if (current || !ended) {
    current?.out.destroy();
    throw new Error('the archive is truncated (it ends before its last file does)');
  }
  return names;
}
