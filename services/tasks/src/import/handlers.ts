import { createHash } from 'node:crypto';
import {
  AppError,
  IMPORT_LIMITS,
  IMPORT_PREVIEW_LIST,
  type HttpCall,
  type ImportCount,
  type ImportProblem,
  type ImportRecurrence,
  type ImportView,
  type UploadChunk,
  type UploadRef,
} from '@tasksvc/proto';
import type * as Phrases from '@tasksvc/proto/calendar/phrases.ts';
import { localDate } from '@tasksvc/proto/calendar/dates.ts';
import type { Logger, Pool } from '@tasksvc/runtime';
import { cancelImport, claimImport, dropFile, failImport, getImport, insertImport, knownSources, ownTaskIds, readFile, reportProgress, sweepImports, STALE_SECONDS, storeChunk, type ImportRow } from '../db/imports.ts';
import { ensureProfile } from '../db/profiles.ts';
import { userOf } from '../handlers/common.ts';
import { applyPlan } from './apply.ts';
import type { ReadContext } from './domain/context.ts';
import { describeIssue, ImportFileError, planCounts, planDigest, planSize, type ImportPlan } from './domain/plan.ts';

/**
 * The import's bus entry points: pieces of an upload, the upload's preview, its confirm (run in the
 * background, all or nothing), progress, the preview's lists, and cancel.
 */

export interface ImportCtx {
  pool: Pool;
  log: Logger;
  /** kick the outbox relay after a commit */
  kick: () => void;
  /** what this version's tasks can hold */
  features: { subtasks: boolean; dueTime: boolean };
}

/** The stored preview: the view's, with the whole lists. */
interface StoredPreview {
  files: string[];
  counts: ImportCount[];
  problems: ImportProblem[];
  recurrences: ImportRecurrence[];
}

type IdCall<Q = unknown, B = unknown> = HttpCall<{ id: string }, Q, B>;

export async function storePiece(ctx: ImportCtx, chunk: UploadChunk): Promise<{ stored: true }> {
  await storeChunk(ctx.pool, chunk.user.id, chunk.uploadId, chunk.seq, Buffer.from(chunk.data, 'base64'));
  return { stored: true };
}

function readContext(ctx: ImportCtx, phrases: typeof Phrases, today: string, timeZone: string): ReadContext {
  return {
    today,
    timeZone,
    when: (text, c) => phrases.parseWhen(text, c),
    describe: phrases.describeRecurrence,
    subtasks: ctx.features.subtasks,
    dueTime: ctx.features.dueTime,
    maxItems: IMPORT_LIMITS.maxItems,
  };
}

/** The pieces of an upload, put together. */
async function storedFile(ctx: ImportCtx, userId: string, id: string): Promise<{ file: Buffer; pieces: number }> {
  const pieces = await readFile(ctx.pool, userId, id);
  return { file: Buffer.concat(pieces.map((p) => p.data)), pieces: pieces.length };
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** The upload's bytes, checked against what the gateway sent (every piece there, nothing else). */
async function assemble(ctx: ImportCtx, userId: string, ref: UploadRef): Promise<Buffer> {
  const { file, pieces } = await storedFile(ctx, userId, ref.id);
  if (pieces !== ref.chunks || file.length !== ref.bytes || sha256(file) !== ref.sha256) throw new AppError('CONFLICT', 'the upload arrived incomplete: send the file again');
  return file;
}

/** A file that cannot be read: 400 naming file, row and field of each place. */
function unreadable(err: ImportFileError): AppError {
  return new AppError(
    'IMPORT_FILE_INVALID',
    `the file cannot be imported: ${describeIssue(err.issues[0]!)}`,
    err.issues.map((i) => ({
      path: `${i.file}${i.row !== null ? `:${i.row}` : ''}${i.field ? `.${i.field}` : ''}`,
      message: i.message,
      file: i.file,
      ...(i.row !== null ? { row: i.row } : {}),
      ...(i.field ? { field: i.field } : {}),
    })),
  );
}

async function parse(ctx: ImportCtx, name: string, file: Buffer, today: string, zone: string): Promise<ImportPlan> {
  // the file formats' readers (ical.js, csv-parse, fflate) and the date phrase parser (chrono-node)
  // load with the first upload, not at start (test/lazy-imports.test.ts)
  const [{ readImport }, phrases] = await Promise.all([import('./domain/read.ts'), import('@tasksvc/proto/calendar/phrases.ts')]);
  try {
    return readImport(name, file, readContext(ctx, phrases, today, zone));
  } catch (err) {
    if (err instanceof ImportFileError) throw unreadable(err);
    throw err;
  }
}

export async function upload(ctx: ImportCtx, call: HttpCall<unknown, { filename?: string | undefined }, UploadRef>): Promise<{ import: ImportView }> {
  const userId = userOf(call).id;
  const ref = call.body;
  const name = call.query.filename ?? 'upload';
  try {
    await sweepImports(ctx.pool);
    const file = await assemble(ctx, userId, ref);
    const profile = await ensureProfile(ctx.pool, userId);
    const today = localDate(new Date(), profile.timezone);
    const plan = await parse(ctx, name, file, today, profile.timezone);
    const already = await alreadyHere(ctx, userId, plan);
    const preview: StoredPreview = { files: plan.files, counts: planCounts(plan, already), problems: plan.problems, recurrences: plan.recurrences };
    const row = await insertImport(ctx.pool, {
      id: ref.id,
      userId,
      status: 'previewed',
      format: plan.format,
      fileName: name,
      bytes: ref.bytes,
      sha256: ref.sha256,
      referenceDate: today,
      timeZone: profile.timezone,
      planDigest: planDigest(plan),
      preview,
      progressTotal: planSize(plan),
      expiresAt: new Date(Date.now() + IMPORT_LIMITS.previewHours * 3_600_000),
    });
    return { import: view(row) };
  } catch (err) {
    // nothing is kept of a file that is not previewed
    await dropFile(ctx.pool, ref.id).catch(() => undefined);
    throw err;
  }
}

/** Which of the plan's items this account has already: an earlier import's, or (own export) its own tasks. */
async function alreadyHere(ctx: ImportCtx, userId: string, plan: ImportPlan): Promise<(key: string) => boolean> {
  const keys = [...plan.topics.map((t) => t.key), ...plan.tasks.map((t) => t.key), ...plan.wishlist.map((w) => w.key), ...plan.checkins.map((c) => c.key)];
  const known = await knownSources(ctx.pool, userId, keys);
  const own = await ownTaskIds(ctx.pool, userId, plan.tasks.flatMap((t) => (t.ownId ? [t.ownId] : [])));
  const ownKeys = new Set(plan.tasks.filter((t) => t.ownId && own.has(t.ownId)).map((t) => t.key));
  return (key) => known.has(key) || ownKeys.has(key);
}

function view(row: ImportRow): ImportView {
  const p = row.preview as StoredPreview;
  const stale = row.status === 'running' && (!row.heartbeatAt || Date.now() - row.heartbeatAt.getTime() > STALE_SECONDS * 1000);
  return {
    id: row.id,
    status: stale ? 'failed' : row.status,
    format: row.format,
    fileName: row.fileName,
    bytes: row.bytes,
    files: p.files,
    createdAt: row.createdAt.toISOString(),
    expiresAt: row.expiresAt.toISOString(),
    preview: {
      counts: p.counts,
      problems: { total: p.problems.length, items: p.problems.slice(0, IMPORT_PREVIEW_LIST) },
      recurrences: { total: p.recurrences.length, items: p.recurrences.slice(0, IMPORT_PREVIEW_LIST) },
    },
    progress: { done: row.progressDone, total: row.progressTotal },
    result: (row.result as ImportView['result']) ?? null,
    error: stale ? 'the import was interrupted before it finished; nothing of it was written — confirm it again' : row.error,
  };
}

async function mine(ctx: ImportCtx, call: IdCall): Promise<ImportRow> {
  const row = await getImport(ctx.pool, userOf(call).id, call.params.id);
  if (!row) throw new AppError('IMPORT_NOT_FOUND', 'no such import');
  return row;
}

export async function get(ctx: ImportCtx, call: IdCall): Promise<{ import: ImportView }> {
  return { import: view(await mine(ctx, call)) };
}

export async function problems(ctx: ImportCtx, call: IdCall<{ offset: number; limit: number }>) {
  const p = (await mine(ctx, call)).preview as StoredPreview;
  return { total: p.problems.length, items: p.problems.slice(call.query.offset, call.query.offset + call.query.limit) };
}

export async function recurrences(ctx: ImportCtx, call: IdCall<{ offset: number; limit: number }>) {
  const p = (await mine(ctx, call)).preview as StoredPreview;
  return { total: p.recurrences.length, items: p.recurrences.slice(call.query.offset, call.query.offset + call.query.limit) };
}

export async function cancel(ctx: ImportCtx, call: IdCall): Promise<{ import: ImportView }> {
  const row = await cancelImport(ctx.pool, userOf(call).id, call.params.id);
  if (!row) {
    const current = await mine(ctx, call);
    throw new AppError('IMPORT_STATE', `the import is ${view(current).status}: only a preview can be cancelled`);
  }
  await dropFile(ctx.pool, row.id);
  return { import: view(row) };
}

/** Imports this process runs, so a stop can end them (each rolls back) and wait. */
export class ImportRunner {
  private readonly running = new Map<string, { abort: AbortController; done: Promise<void> }>();
  private readonly ctx: ImportCtx;

  constructor(ctx: ImportCtx) {
    this.ctx = ctx;
  }

  async confirm(call: IdCall): Promise<{ import: ImportView }> {
    const userId = userOf(call).id;
    const current = await mine(this.ctx, call);
    const row = await claimImport(this.ctx.pool, userId, current.id, current.progressTotal);
    if (!row) {
      const status = view(current).status;
      const why = status === 'running' ? 'it is running' : status === 'done' ? 'it is done' : current.expiresAt < new Date() ? 'its preview has expired: upload the file again' : `it is ${status}`;
      throw new AppError('IMPORT_STATE', `the import cannot be confirmed: ${why}`);
    }
    const abort = new AbortController();
    const done = this.run(row, abort.signal).finally(() => this.running.delete(row.id));
    this.running.set(row.id, { abort, done });
    return { import: view(row) };
  }

  private async run(row: ImportRow, signal: AbortSignal): Promise<void> {
    const { pool, log } = this.ctx;
    try {
      const { file } = await storedFile(this.ctx, row.userId, row.id);
      if (file.length !== row.bytes || sha256(file) !== row.sha256) throw new Error('the uploaded file is no longer complete: upload it again');
      const plan = await parse(this.ctx, row.fileName, file, row.referenceDate, row.timeZone);
      if (planDigest(plan) !== row.planDigest) throw new Error('the file now reads differently from its preview (the app was updated meanwhile): upload it again');
      let last = 0;
      await applyPlan(pool, row.id, row.userId, plan, {
        ...this.ctx.features,
        timeZone: row.timeZone,
        signal,
        progress: async (n) => {
          // at most a few writes a second: progress is for people
          if (n === planSize(plan) || Date.now() - last > 250) {
            last = Date.now();
            await reportProgress(pool, row.id, n);
          }
        },
      });
      await dropFile(pool, row.id);
      this.ctx.kick();
      log.info({ importId: row.id, format: row.format, items: planSize(plan) }, 'import done');
    } catch (err) {
      const message = err instanceof AppError || err instanceof Error ? err.message : String(err);
      log.warn({ importId: row.id, err }, 'import failed: nothing of it was written');
      await failImport(pool, row.id, message).catch((e: unknown) => log.error({ err: e, importId: row.id }, 'import failure not recorded'));
    }
  }

  async stop(): Promise<void> {
    for (const r of this.running.values()) r.abort.abort();
    await Promise.all([...this.running.values()].map((r) => r.done));
  }
}
