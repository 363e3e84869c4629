import { randomUUID } from 'node:crypto';
import { task } from '@tasksvc/proto';
import type { Pool } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migratedDatabase } from '../../../../tools/testenv/index.ts';
import { tasksService } from '../service.ts';
import { listTasks } from './tasks.ts';

/** A list's page statement returns what its reply shows and no column the reply's schema check would strip (issue 58/61). */
describe('the page statement of a list', () => {
  let pool: Pool;
  beforeAll(async () => {
    pool = await migratedDatabase(tasksService.migrations!);
  });
  afterAll(() => pool.end());

  it.each([
    ['without filters', {}],
    ['filtered', { completed: false, topicId: 'none' }],
  ])('returns the API task fields, the zone and the total: %s', async (_, filters) => {
    const userId = randomUUID();
    await pool.query('INSERT INTO tasks.profiles (user_id, task_count) VALUES ($1, 1)', [userId]);
    await pool.query(`INSERT INTO tasks.tasks (user_id, title, type) VALUES ($1, 't', 'ONE_TIME')`, [userId]);
    const { rows } = await listTasks(pool, userId, { ...filters, limit: 50, offset: 0 }, '2026-12-07');
    expect(rows).toHaveLength(1);
    // the filtered shape also carries its window count
    const extra = Object.keys(filters).length ? ['on_page'] : [];
    expect(Object.keys(rows[0]!).sort()).toEqual([...Object.keys(task.shape), 'total', 'zone', ...extra].sort());
  });
});
