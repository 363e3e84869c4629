import { describe, expect, it, vi } from 'vitest';

// Counts the zod objects proto builds: a route's bus request is built with its first read, not when the
// route is defined (http.ts defineRoute; issue 58, Memory: every process defines every route).
const built = vi.hoisted(() => ({ objects: 0 }));
vi.mock('zod', async (importOriginal) => {
  const zod = await importOriginal<typeof import('zod')>();
  const object: typeof zod.z.object = ((...args: Parameters<typeof zod.z.object>) => {
    built.objects++;
    return zod.z.object(...args);
  }) as typeof zod.z.object;
  return { ...zod, z: { ...zod.z, object } };
});

const { routes } = await import('./routes.ts');
const { tasksApi } = await import('./tasks.ts');
const { tolerant } = await import('./contracts.ts');

describe("a route's bus request", () => {
  it('is built on its first read, once per route, and reads a call as before', () => {
    expect(routes.length).toBeGreaterThan(100);
    const before = built.objects;
    for (const r of routes) expect(r.rpc.subject).toBeTypeOf('string');
    expect(built.objects).toBe(before);

    const request = tasksApi.create.rpc.request;
    expect(built.objects).toBe(before + 1);
    expect(tasksApi.create.rpc.request).toBe(request);
    expect(tolerant(tasksApi.create.rpc.request)).toBe(tolerant(request));
    expect(built.objects).toBe(before + 1);
    for (const r of routes) expect(r.rpc.request).toBeDefined();
    expect(built.objects).toBe(before + routes.length);

    const call = { user: null, params: {}, query: {}, body: { title: 'x', type: 'ONE_TIME' } };
    expect(request.parse(call)).toMatchObject({ user: null, params: {}, query: {}, body: { title: 'x', type: 'ONE_TIME' } });
    const bad = request.safeParse({ ...call, body: { title: 'x', type: 'ONE_TIME', extra: 1 } });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]).toMatchObject({ code: 'unrecognized_keys', keys: ['extra'], path: ['body'] });
  });
});
