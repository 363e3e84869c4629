/**
 * Type-level test of the UI's HTTP client (ui/src/lib/api.ts), checked by `npm run typecheck` (the
 * root tsconfig includes ui/test) and never run: the client is typed from proto's route table, so a
 * misspelt body key, a wrong value, a missing param or a path the gateway does not serve is a compile
 * error. Each `@ts-expect-error` below fails the typecheck ("unused directive") should the typing
 * go (say, `parts` or `body` widened to `unknown`).
 */
import { expectTypeOf } from 'vitest';
import { get, patch, post, put, request, type BodyOf, type ReplyOf } from '../src/lib/api.ts';
import type { Task, Topic } from '../src/lib/types.ts';

export function typedClient(id: string): void {
  // What the routes take is accepted.
  void post('/api/tasks', { body: { title: 'Buy milk', priority: 'HIGH', dueDate: '2026-12-24' } });
  void patch('/api/tasks/:id', { params: { id }, body: { priority: 'SOMEDAY' } });
  void put('/api/settings/notifications', { body: { enabled: false } });
  void get('/api/tasks', { query: { completed: false, limit: 200 } });
  void post('/api/tasks/:id/complete', { params: { id } });
  request('PATCH', '/api/tasks/bulk', { body: { action: 'delete', taskIds: [id] } });

  // A misspelt body key.
  // @ts-expect-error 'priortiy' is not a key of the create body
  void post('/api/tasks', { body: { title: 'Buy milk', priortiy: 'HIGH' } });
  // @ts-expect-error 'dueDat' is not a key of the update body
  void patch('/api/tasks/:id', { params: { id }, body: { dueDat: '2026-12-24' } });
  // @ts-expect-error the write queue's requests are checked the same way
  request('POST', '/api/tasks/:id/snooze', { params: { id }, body: { snoozeUntil: '2026-12-24' } });
  // @ts-expect-error a settings key that does not exist
  void put('/api/settings/notifications', { body: { enabeld: false } });

  // A wrong value, a missing required key.
  // @ts-expect-error priority is HIGH, NORMAL or SOMEDAY
  void post('/api/tasks', { body: { title: 'Buy milk', priority: 'URGENT' } });
  // @ts-expect-error a task needs a title
  void post('/api/tasks', { body: { priority: 'HIGH' } });

  // Paths, params and queries.
  // @ts-expect-error no such route
  void post('/api/task', { body: { title: 'Buy milk' } });
  // @ts-expect-error GET /api/tasks/:id exists, POST does not
  void post('/api/tasks/:id', { params: { id } });
  // @ts-expect-error the path's :id is required
  void get('/api/tasks/:id');
  // @ts-expect-error a GET takes no body
  void get('/api/tasks', { body: { title: 'x' } });
  // @ts-expect-error 'complete' is not a filter of GET /api/tasks (it is 'completed')
  void get('/api/tasks', { query: { complete: false } });

  // Replies are the route's reply schema.
  expectTypeOf<ReplyOf<'GET', '/api/tasks'>['tasks']>().toEqualTypeOf<Task[]>();
  expectTypeOf<ReplyOf<'POST', '/api/topics'>['topic']>().toEqualTypeOf<Topic>();
  expectTypeOf(get('/api/tasks/:id', { params: { id } })).resolves.toHaveProperty('task');
  expectTypeOf<BodyOf<'POST', '/api/tasks'>>().toHaveProperty('title');
}
