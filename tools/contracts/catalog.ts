import * as proto from '@tasksvc/proto';
import type { z } from 'zod';

/** One contract as the compatibility check sees it: a request/reply pair, or an event. */
export type Contract = { kind: 'rpc'; subject: string; request: z.ZodType; reply: z.ZodType } | { kind: 'event'; subject: string; schema: z.ZodType };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/**
 * Every contract proto declares, found in what it exports: HTTP routes (their bus request and reply),
 * request/reply pairs, events, and the per-service ones (`pingRpc(name)` …) for every service. By
 * subject, sorted; a contract a new module adds is found without a list to keep.
 */
export function allContracts(): Contract[] {
  const found = new Map<string, Contract>();
  const visit = (v: unknown, depth: number): void => {
    if (typeof v === 'function') {
      // the per-service contracts: `pingRpc('tasks')` …
      if (/Rpc$/.test(v.name) && v.length === 1) for (const name of proto.SERVICE_NAMES) visit((v as (s: string) => unknown)(name), depth);
      return;
    }
    if (!isObject(v) || depth > 3) return;
    if (isObject(v.rpc) && typeof v.path === 'string') return visit(v.rpc, depth);
    if (typeof v.subject === 'string' && isObject(v.request) && isObject(v.reply)) {
      found.set(v.subject, { kind: 'rpc', subject: v.subject, request: v.request as unknown as z.ZodType, reply: v.reply as unknown as z.ZodType });
      return;
    }
    if (typeof v.subject === 'string' && isObject(v.schema)) {
      found.set(v.subject, { kind: 'event', subject: v.subject, schema: v.schema as unknown as z.ZodType });
      return;
    }
    // collections of contracts (`tasksApi`, `taskEvents`, route lists); never a schema's own fields
    if (!('_zod' in v)) for (const x of Object.values(v)) visit(x, depth + 1);
  };
  for (const v of Object.values(proto)) visit(v, 0);
  return [...found.values()].sort((a, b) => a.subject.localeCompare(b.subject));
}
