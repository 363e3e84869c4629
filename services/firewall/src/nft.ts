// libnftables in-process through koffi (no `nft` subprocess). One fresh context per command:
// reusing a context after a dry run made later runs fail on libnftables 1.0.6.
import koffi from 'koffi';

const OUTPUT_STATELESS = 1 << 2;
const OUTPUT_HANDLE = 1 << 3;
const OUTPUT_JSON = 1 << 4;
/** Omit set elements: listings stay cheap whatever the size of the blacklist. */
const OUTPUT_TERSE = 1 << 11;

interface Lib {
  ctxNew: (flags: number) => unknown;
  ctxFree: (ctx: unknown) => void;
  setOutputFlags: (ctx: unknown, flags: number) => void;
  bufferOutput: (ctx: unknown) => number;
  bufferError: (ctx: unknown) => number;
  setDryRun: (ctx: unknown, dry: boolean) => void;
  run: (ctx: unknown, buf: string) => number;
  getOutput: (ctx: unknown) => string | null;
  getError: (ctx: unknown) => string | null;
}

let lib: Lib | undefined;

function load(): Lib {
  if (lib) return lib;
  const so = koffi.load('libnftables.so.1');
  lib = {
    ctxNew: so.func('void *nft_ctx_new(uint32_t flags)'),
    ctxFree: so.func('void nft_ctx_free(void *ctx)'),
    setOutputFlags: so.func('void nft_ctx_output_set_flags(void *ctx, uint32_t flags)'),
    bufferOutput: so.func('int nft_ctx_buffer_output(void *ctx)'),
    bufferError: so.func('int nft_ctx_buffer_error(void *ctx)'),
    setDryRun: so.func('void nft_ctx_set_dry_run(void *ctx, bool dry)'),
    run: so.func('int nft_run_cmd_from_buffer(void *ctx, const char *buf)'),
    getOutput: so.func('const char *nft_ctx_get_output_buffer(void *ctx)'),
    getError: so.func('const char *nft_ctx_get_error_buffer(void *ctx)'),
  };
  return lib;
}

export class NftError extends Error {
  readonly nftMessage: string;
  constructor(message: string) {
    super(`nftables refused the batch: ${message.trim() || 'unknown error'}`);
    this.nftMessage = message;
  }
}

export interface RunOptions {
  /** Parse and validate in the kernel without committing (`nft --check`). */
  dryRun?: boolean;
  /** Ask for JSON output (listings). */
  json?: boolean;
  /** Listings without set elements, counters or other runtime state. */
  terse?: boolean;
}

/** Run one nft script (native syntax or JSON) as a single batch; returns the output buffer. */
export function nftRun(script: string, opts: RunOptions = {}): string {
  const l = load();
  const ctx = l.ctxNew(0);
  if (!ctx) throw new NftError('nft_ctx_new failed');
  try {
    l.setOutputFlags(ctx, (opts.json ? OUTPUT_JSON | OUTPUT_HANDLE : 0) | (opts.terse ? OUTPUT_TERSE | OUTPUT_STATELESS : 0));
    l.bufferOutput(ctx);
    l.bufferError(ctx);
    if (opts.dryRun) l.setDryRun(ctx, true);
    const rc = l.run(ctx, script);
    if (rc !== 0) throw new NftError(l.getError(ctx) ?? '');
    return l.getOutput(ctx) ?? '';
  } finally {
    l.ctxFree(ctx);
  }
}

/** Our table as nft JSON (`terse`: without set elements), or undefined when it does not exist. */
export function listTableJson(table: string, opts: { terse?: boolean } = {}): unknown {
  const text = listTable(table, { json: true, terse: opts.terse });
  return text === undefined ? undefined : JSON.parse(text);
}

/** `nft list table inet <table>` output, or undefined when the table does not exist. */
export function listTable(table: string, opts: { json?: boolean; terse?: boolean } = {}): string | undefined {
  try {
    return nftRun(`list table inet ${table}`, opts);
  } catch (e) {
    if (e instanceof NftError && /No such file or directory/.test(e.nftMessage)) return undefined;
    throw e;
  }
}

/** True when libnftables can be loaded (the Debian package libnftables1). */
export function nftAvailable(): boolean {
  try {
    load();
    return true;
  } catch {
    return false;
  }
}
