import { AsyncLocalStorage } from 'node:async_hooks';
import { tracingOn, type Queryable } from '@tasksvc/runtime';
import { createShape, insertTask, insertTasks, type CreateArgs, type InsertOutcome } from './tasks.ts';

const callNow = <R>(fn: () => R): R => fn();

interface Waiting {
  args: CreateArgs;
  shape: string;
  /** runs a function in the async context of the request that made this create (its trace) */
  inContext: <R>(fn: () => R) => R;
  resolve(outcome: InsertOutcome): void;
  reject(err: unknown): void;
}

/**
 * Task creates that arrive together reach PostgreSQL together. Under load most of a create's cost is
 * per statement rather than per row: the round trip (a send that wakes the backend, a reply that wakes
 * us), the executor's start, the commit. So the creates that came in during one turn of the event loop
 * are written by one statement (insertTasks), and while `maxInFlight` statements are running, new ones
 * wait and go with the next. A create alone, or one in a topic, takes insertTask's own statement. Each
 * caller is answered after the commit that holds its task, as before.
 *
 * A batch holds each user once (one profile row, one list position each), no user of a batch still
 * running, and creates of one shape; the rest wait for the next. So two batches of this process never
 * lock the same profile rows (in whatever order their plans take them: they could deadlock). A batch
 * that fails wrote nothing, and each of its creates runs on its own, so one bad row fails only its own
 * request.
 */
export class CreateBatcher {
  private waiting: Waiting[] = [];
  private inFlight = 0;
  private scheduled = false;
  /** users with a batch running: a batch holds a user only if no running one does (see take) */
  private readonly busy = new Set<string>();

  private readonly q: Queryable;
  private readonly maxInFlight: number;
  private readonly maxBatch: number;
  private readonly keepContext: boolean;

  /**
   * `keepContext`: run each batch in the async context of its first create; by default only when
   * tracing is on, as only a trace reads it here (a snapshot per create was 2% of a create's CPU).
   */
  constructor(q: Queryable, opts: { maxInFlight?: number; maxBatch?: number; keepContext?: boolean } = {}) {
    this.q = q;
    this.keepContext = opts.keepContext ?? tracingOn();
    this.maxInFlight = opts.maxInFlight ?? 3;
    this.maxBatch = opts.maxBatch ?? 64;
  }

  insert(args: CreateArgs): Promise<InsertOutcome> {
    const shape = createShape(args);
    if (shape === null) return insertTask(this.q, args);
    return new Promise((resolve, reject) => {
      this.waiting.push({ args, shape, inContext: this.keepContext ? AsyncLocalStorage.snapshot() : callNow, resolve, reject });
      this.schedule();
    });
  }

  /** After this turn's I/O callbacks (setImmediate), so the creates read in this turn are seen together. */
  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.maxInFlight || this.waiting.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      while (this.inFlight < this.maxInFlight) {
        const batch = this.take();
        if (batch.length === 0) return; // what waits is of users whose batch is running: it goes after
        this.inFlight++;
        for (const w of batch) this.busy.add(w.args.userId);
        // the statement's span goes to the trace of the batch's first create (not to whichever request's
        // context this callback happens to run in)
        void batch[0]!.inContext(() => this.write(batch)).finally(() => {
          for (const w of batch) this.busy.delete(w.args.userId);
          this.inFlight--;
          this.schedule();
        });
      }
    });
  }

  /** The oldest waiting create whose user has no batch running, and those after it that may share its statement. */
  private take(): Waiting[] {
    const first = this.waiting.find((w) => !this.busy.has(w.args.userId));
    if (!first) return [];
    const users = new Set<string>(this.busy);
    const batch: Waiting[] = [];
    const rest: Waiting[] = [];
    for (const w of this.waiting) {
      if (batch.length < this.maxBatch && w.shape === first.shape && !users.has(w.args.userId)) {
        batch.push(w);
        users.add(w.args.userId);
      } else rest.push(w);
    }
    this.waiting = rest;
    return batch;
  }

  private async write(batch: Waiting[]): Promise<void> {
    const alone = (w: Waiting) =>
      insertTask(this.q, w.args).then(
        (outcome) => w.resolve(outcome),
        (err: unknown) => w.reject(err),
      );
    if (batch.length === 1) return alone(batch[0]!);
    const rows = await insertTasks(
      this.q,
      batch.map((w) => w.args),
    ).catch(() => batch.map(() => null));
    const again: Promise<void>[] = [];
    for (const [i, w] of batch.entries()) {
      const r = rows[i];
      if (!r) {
        again.push(alone(w));
        continue;
      }
      const { zone, ...row } = r;
      w.resolve({ row, zone });
    }
    await Promise.all(again);
  }
}
