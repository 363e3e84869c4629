import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createPool, migrate, type Pool } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quietLogger, testDatabase } from '../../../../tools/testenv/index.ts';
import { tasksService } from '../service.ts';

/** Migration 0104 on a database that already has users with tasks: every profile's count is its tasks'. */
describe('migration 0104_task_count', () => {
  const log = quietLogger();
  let pool: Pool;
  beforeAll(async () => {
    pool = createPool(await testDatabase(), log);
    await migrate(pool, { ...tasksService.migrations!, log });
  });
  afterAll(() => pool.end());

  it('backfills the task count of every existing profile, and 0 where there are no tasks', async () => {
    const users = [randomUUID(), randomUUID(), randomUUID()];
    await pool.query(`INSERT INTO tasks.profiles (user_id) SELECT unnest($1::uuid[])`, [users]);
    // as before the migration: tasks written without the count (3 for the first user, 1 for the second)
    await pool.query(`INSERT INTO tasks.tasks (user_id, title, type) SELECT u, 't', 'ONE_TIME' FROM unnest($1::uuid[]) AS u`, [[users[0], users[0], users[0], users[1]]]);
    await pool.query('ALTER TABLE tasks.profiles DROP COLUMN task_count');
    await pool.query(readFileSync(new URL('../../migrations/0104_task_count.sql', import.meta.url), 'utf8'));
    const { rows } = await pool.query<{ user_id: string; task_count: number }>('SELECT user_id, task_count FROM tasks.profiles WHERE user_id = ANY($1)', [users]);
    expect(Object.fromEntries(rows.map((r) => [r.user_id, r.task_count]))).toEqual({ [users[0]!]: 3, [users[1]!]: 1, [users[2]!]: 0 });
  });
});
