import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { exact, tolerant } from './contracts.ts';
import { defineRoute } from './http.ts';

const id = '6f1c1f3e-5b7a-4c2e-9d51-0a9a3f1e2b44';

describe('tolerant: how a receiver reads a contract of another release', () => {
  const sent = z
    .object({
      id: z.uuid(),
      title: z.string(),
      note: z.string().nullable(),
      tags: z.array(z.string()),
      size: z.number().default(1),
      inner: z.object({ at: z.string() }).strict(),
      when: z.discriminatedUnion('kind', [z.object({ kind: z.literal('at'), at: z.string() }).strict(), z.object({ kind: z.literal('before'), minutes: z.number() }).strict()]).array(),
    })
    .strict();
  const read = tolerant(sent);

  it('ignores keys it does not know, at every depth, unions included', () => {
    const r = read.parse({ id, title: 't', note: 'n', tags: ['x'], size: 2, inner: { at: 'now', later: 1 }, when: [{ kind: 'at', at: 'now', zone: 'UTC' }], added: true });
    expect(r).toEqual({ id, title: 't', note: 'n', tags: ['x'], size: 2, inner: { at: 'now' }, when: [{ kind: 'at', at: 'now' }] });
  });

  it('reads a key an older sender left out as its default: declared, else null or an empty list', () => {
    expect(read.parse({ id, title: 't', inner: { at: 'now' } })).toEqual({ id, title: 't', note: null, tags: [], size: 1, inner: { at: 'now' }, when: [] });
  });

  it('still refuses what it cannot read: a required key missing, a wrong type, an unknown enum value', () => {
    expect(read.safeParse({ id, inner: { at: 'now' } }).error?.issues.map((i) => i.path.join('.'))).toEqual(['title']);
    expect(read.safeParse({ id, title: 1, inner: { at: 'now' } }).success).toBe(false);
    expect(read.safeParse({ id, title: 't', inner: { at: 'now' }, when: [{ kind: 'after', at: 'x' }] }).success).toBe(false);
  });

  it('leaves the sender’s reading strict, keeps refinements, and derives once per schema', () => {
    expect(sent.safeParse({ id, title: 't', note: null, tags: [], inner: { at: 'x' }, when: [], added: 1 }).success).toBe(false);
    const refined = z.object({ a: z.number() }).strict().refine((o) => o.a > 0, 'must be positive');
    expect(tolerant(refined).safeParse({ a: -1, b: 2 }).error?.issues[0]?.message).toBe('must be positive');
    expect(tolerant(sent)).toBe(read);
  });

  it('keeps HTTP inputs exact: an unknown body field is refused by the answering release, naming it', () => {
    const route = defineRoute({ method: 'POST', path: '/x', auth: 'user', subject: 'x.create', body: z.object({ title: z.string() }).strict(), response: z.object({}), summary: 'x', tag: 'x' });
    const r = tolerant(route.rpc.request).safeParse({ user: null, params: {}, query: {}, body: { title: 't', parentId: id }, traceId: 'ignored' });
    expect(r.error?.issues).toMatchObject([{ code: 'unrecognized_keys', keys: ['parentId'], path: ['body'] }]);
    expect(tolerant(route.rpc.request).parse({ user: null, params: {}, query: {}, body: { title: 't' }, traceId: 'ignored' })).toEqual({ user: null, params: {}, query: {}, body: { title: 't' } });
    expect(tolerant(exact(z.object({ a: z.number() }).strict())).safeParse({ a: 1, b: 2 }).success).toBe(false);
  });
});
