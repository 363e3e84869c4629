/**
 * A keyed, deduping work queue (the client-go workqueue idea): a key waiting is queued once however
 * many events arrive; a key being processed is never processed twice at once (a new event marks it
 * dirty and it runs again afterwards); failures retry with exponential backoff.
 */

export interface WorkQueueOptions {
  workers?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  onError?: (key: string, err: unknown, attempt: number) => void;
}

/** What a handler may ask for after success: run again later (a timed check). */
export type HandlerResult = void | { requeueAfterMs: number };

export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly queued = new Set<string>();
  private readonly active = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, { timer: NodeJS.Timeout; due: number }>();
  private running = 0;
  private stopped = false;
  private idleWaiters: (() => void)[] = [];
  private readonly handler: (key: string) => Promise<HandlerResult>;
  private readonly opts: Required<Omit<WorkQueueOptions, 'onError'>> & Pick<WorkQueueOptions, 'onError'>;

  constructor(handler: (key: string) => Promise<HandlerResult>, opts: WorkQueueOptions = {}) {
    this.handler = handler;
    this.opts = { workers: opts.workers ?? 2, baseDelayMs: opts.baseDelayMs ?? 200, maxDelayMs: opts.maxDelayMs ?? 60_000, onError: opts.onError };
  }

  add(key: string): void {
    if (this.stopped) return;
    if (this.active.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    this.queued.add(key);
    this.queue.push(key);
    this.pump();
  }

  /** Add after a delay; of several pending delayed adds for a key, the earliest wins. */
  addAfter(key: string, ms: number): void {
    if (this.stopped) return;
    const due = Date.now() + ms;
    const existing = this.timers.get(key);
    if (existing && existing.due <= due) return;
    if (existing) clearTimeout(existing.timer);
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, ms);
    timer.unref();
    this.timers.set(key, { timer, due });
  }

  /** Retry delay for the n-th consecutive failure (n >= 1). */
  backoff(n: number): number {
    return Math.min(this.opts.maxDelayMs, this.opts.baseDelayMs * 2 ** (n - 1));
  }

  get length(): number {
    return this.queue.length;
  }

  /** Resolves when nothing is queued or running (used for graceful shutdown and tests). */
  idle(): Promise<void> {
    if (this.running === 0 && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stop taking work; in-flight handlers finish. */
  async shutdown(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t.timer);
    this.timers.clear();
    this.queue.length = 0;
    this.queued.clear();
    this.dirty.clear();
    await this.idle();
  }

  private pump(): void {
    while (!this.stopped && this.running < this.opts.workers && this.queue.length > 0) {
      const key = this.queue.shift() as string;
      this.queued.delete(key);
      this.active.add(key);
      this.running++;
      void this.process(key);
    }
    if (this.running === 0 && this.queue.length === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  private async process(key: string): Promise<void> {
    try {
      const result = await this.handler(key);
      this.failures.delete(key);
      if (result && typeof result === 'object') this.addAfter(key, result.requeueAfterMs);
    } catch (err) {
      const n = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, n);
      this.opts.onError?.(key, err, n);
      this.addAfter(key, this.backoff(n));
    } finally {
      this.active.delete(key);
      this.running--;
      if (this.dirty.delete(key)) this.add(key);
      this.pump();
    }
  }
}
