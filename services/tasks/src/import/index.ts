import { importApi, importChunkRpc } from '@tasksvc/proto';
import type { Bus, Subscription } from '@tasksvc/runtime';
import type { Ctx } from '../handlers/common.ts';
import * as h from './handlers.ts';

/** What tasks here can hold besides the basics: a file's subtasks and times of day are kept only where they can be. */
export const IMPORT_FEATURES = { subtasks: true, dueTime: true };

/**
 * The import (docs/moving.md): its HTTP routes and the pieces of its uploads, served from the
 * tasks service. Returned as one subscription whose stop also ends running imports (each rolls back).
 */
export function registerImport(bus: Bus, ctx: Ctx): Subscription {
  const ic: h.ImportCtx = { pool: ctx.pool, log: ctx.log, kick: () => ctx.relay.kick(), features: IMPORT_FEATURES };
  const runner = new h.ImportRunner(ic);
  const subs = [
    bus.serve(importChunkRpc, (chunk) => h.storePiece(ic, chunk)),
    bus.serve(importApi.upload.rpc, (call) => h.upload(ic, call)),
    bus.serve(importApi.get.rpc, (call) => h.get(ic, call)),
    bus.serve(importApi.problems.rpc, (call) => h.problems(ic, call)),
    bus.serve(importApi.recurrences.rpc, (call) => h.recurrences(ic, call)),
    bus.serve(importApi.confirm.rpc, (call) => runner.confirm(call)),
    bus.serve(importApi.cancel.rpc, (call) => h.cancel(ic, call)),
  ];
  return {
    async stop() {
      for (const s of subs) await s.stop();
      await runner.stop();
    },
  };
}
