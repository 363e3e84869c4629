import { defineEvent, defineRoute, tolerant } from '@tasksvc/proto';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { allContracts, type Contract } from './catalog.ts';
import { describeErrors, partsOf, problemsBeside, receiveSchema, releasedFixtures, snapshot, wireExample, type ReleaseFixture } from './fixtures.ts';

/**
 * Every contract against the kept contracts of every released version (proto/contracts/<version>.json,
 * written by tools/contracts/snapshot.ts at each release): two adjacent releases run side by side
 * during a rolling upgrade, so what a sender of that release sends must read in this release's
 * receiver, and what this release's sender sends must read in that release's receiver.
 */

const current = allContracts();
const fixtures = releasedFixtures();

it('finds the contracts proto declares (routes, requests, events, per-service ones) and keeps a released version', () => {
  const subjects = current.map((c) => c.subject);
  expect(subjects).toEqual(expect.arrayContaining(['events.task.created', 'events.notify.requested', 'tasks.http.create', 'auth.identity.resolve', 'svc.webhook.ping', 'svc.webhook.dead-letters']));
  expect(new Set(subjects).size).toBe(subjects.length);
  expect(fixtures.length).toBeGreaterThan(0);
});

it('has an example for every part of every contract, and its receivers read their own senders', () => {
  const ajv = new Ajv2020({ strict: false, logger: false });
  for (const c of current)
    for (const [part, schema] of partsOf(c)) {
      const example = wireExample(c.subject, part, schema);
      expect(tolerant(schema).safeParse(example).success, `${c.subject} ${part}`).toBe(true);
      expect(ajv.validate(receiveSchema(schema), example), `${c.subject} ${part}: ${describeErrors(ajv.errors)}`).toBe(true);
    }
});

describe.each(fixtures.map((f) => [f.version, f] as const))('beside release %s', (version, fixture: ReleaseFixture) => {
  it(`still has every contract release ${version} may call or consume`, () => {
    const now = new Set(current.map((c) => c.subject));
    expect(Object.keys(fixture.contracts).filter((s) => !now.has(s)), 'contracts removed while a release that uses them may still run').toEqual([]);
  });

  it.each(current.filter((c) => fixture.contracts[c.subject]).map((c) => [c.subject, c] as const))('%s: reads both ways', (_subject, c) => {
    expect(problemsBeside(fixture, c)).toEqual([]);
  });
});

describe('the check itself, on contracts changed between two releases', () => {
  const event = (schema: z.ZodType): Contract => ({ kind: 'event', ...defineEvent('events.thing.moved', schema) });
  const before = z.object({ id: z.uuid(), kind: z.enum(['a', 'b']), at: z.string() }).strict();
  const released = snapshot('1.0.0', [event(before)]);

  it('passes a key added as nullable, as a list or with a default, and an enum value added', () => {
    const after = z.object({ id: z.uuid(), kind: z.enum(['a', 'b', 'c']), at: z.string(), note: z.string().nullable(), tags: z.array(z.string()), size: z.number().default(1) }).strict();
    expect(problemsBeside(released, event(after))).toEqual([]);
  });

  it('fails a key added as required, and one removed that the older release requires', () => {
    expect(problemsBeside(released, event(before.extend({ parentId: z.uuid() }))).join('\n')).toMatch(/release 1\.0\.0 sends does not read here: parentId: /);
    expect(problemsBeside(released, event(before.omit({ at: true }))).join('\n')).toMatch(/release 1\.0\.0 cannot read the event this release sends: .*'at'/);
  });

  it('fails a type narrowed or changed, in either direction', () => {
    expect(problemsBeside(released, event(before.extend({ at: z.number() })))).toHaveLength(2);
  });

  it('allows the exact HTTP input’s refusal of a body field the older release does not know, nothing else', () => {
    const route = (body: z.ZodObject): Contract => {
      const r = defineRoute({ method: 'POST', path: '/x', auth: 'user', subject: 'x.http.create', body, response: z.object({ id: z.string() }), summary: 'x', tag: 'x' });
      return { kind: 'rpc', subject: r.rpc.subject, request: r.rpc.request, reply: r.rpc.reply };
    };
    const old = snapshot('1.0.0', [route(z.object({ title: z.string() }).strict())]);
    expect(problemsBeside(old, route(z.object({ title: z.string(), parentId: z.uuid().optional() }).strict()))).toEqual([]);
    expect(problemsBeside(old, route(z.object({ title: z.string(), parentId: z.uuid() }).strict())).join('\n')).toMatch(/request release 1\.0\.0 sends does not read here: body\.parentId/);
  });
});
