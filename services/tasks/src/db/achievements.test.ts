import { randomUUID } from 'node:crypto';
import type { Pool, Queryable } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedCompletions } from '../../../../tools/testenv/history.ts';
import { migratedDatabase } from '../../../../tools/testenv/index.ts';
import { thresholdsOf } from '../game/domain/achievements.ts';
import { unlockAchievements } from '../game/unlock.ts';
import { tasksService } from '../service.ts';
import { achievementStats, setStreaksAndReadStats, type StreakUpdate } from './achievements.ts';

/**
 * The achievements' figures read a user's completions only as far as the rules can still use them
 * (issues 58 and 61), and the rules decide exactly as on the whole count. The history is written
 * straight into the database, as years of use would have left it.
 */
describe('the achievements of a long history', () => {
  let pool: Pool;
  beforeAll(async () => void (pool = await migratedDatabase(tasksService.migrations!)));
  afterAll(() => pool.end());

  const TASKS = thresholdsOf('tasksCompleted');
  const user = async () => {
    const u = randomUUID();
    await pool.query('INSERT INTO tasks.profiles (user_id) VALUES ($1)', [u]);
    return u;
  };
  /** `n` completed tasks of the user, each with its completion */
  const complete = (u: string, n: number, o: { priority?: 'HIGH' | 'NORMAL'; imported?: boolean; subtask?: boolean; quest?: boolean } = {}) =>
    seedCompletions(pool, [u], n, { ...o, subtaskOf: o.subtask ? randomUUID() : null });
  const unlock = async (u: string) => (await unlockAchievements(pool, u, null)).map((x) => x.key);
  /** the user's steps and imported history, which count for no "tasks completed" milestone */
  const uncounted = async (u: string, n: number, priority: 'HIGH' | 'NORMAL' = 'HIGH') => {
    await complete(u, n, { imported: true, priority });
    await complete(u, n, { subtask: true, priority });
  };

  it('unlocks each tasks_N at exactly N completed tasks, with subtasks and imported history not counted', async () => {
    const u = await user();
    await uncounted(u, 1_100);
    let done = 0;
    for (const { key, atLeast } of TASKS) {
      await complete(u, atLeast - 1 - done);
      expect(await unlock(u), `${atLeast - 1} completed`).not.toContain(key);
      await complete(u, 1);
      done = atLeast;
      expect(await unlock(u), `${atLeast} completed`).toContain(key);
    }
    expect((await achievementStats(pool, u))!.tasksCapped, 'every tasks_N unlocked: nothing left to count').toBe(0);
  }, 60_000);

  it('unlocks every milestone a long history reached at once: the count stops at the highest one still locked, not the next', async () => {
    const u = await user();
    await complete(u, 600);
    expect((await achievementStats(pool, u))!.tasksCapped).toBe(600);
    expect((await unlock(u)).filter((k) => k.startsWith('tasks_'))).toEqual(['tasks_1', 'tasks_10', 'tasks_50', 'tasks_100', 'tasks_200', 'tasks_500']);
    await complete(u, 900);
    expect((await achievementStats(pool, u))!.tasksCapped, 'capped at tasks_1000').toBe(1_000);
  });

  it('fires first_quest and first_high_priority, not on a subtask or imported HIGH completion, and reads neither once unlocked', async () => {
    const u = await user();
    await complete(u, 50);
    await uncounted(u, 20);
    expect(await achievementStats(pool, u)).toMatchObject({ questsCapped: 0, highCapped: 0 });
    expect(await unlock(u)).not.toContain('first_high_priority');
    await complete(u, 1, { quest: true });
    await complete(u, 1, { priority: 'HIGH' });
    expect(await achievementStats(pool, u)).toMatchObject({ questsCapped: 1, highCapped: 1 });
    expect(await unlock(u)).toEqual(expect.arrayContaining(['first_quest', 'first_high_priority']));
    expect(await achievementStats(pool, u)).toMatchObject({ questsCapped: 0, highCapped: 0 });
  });

  /**
   * Rows each table's scans read (returned or filtered out), by EXPLAIN ANALYZE: a bitmap scan's are its
   * index's entries, counted on the bitmap's table.
   */
  type PlanNode = { 'Node Type': string; 'Relation Name'?: string; 'Actual Rows': number; 'Actual Loops': number; 'Rows Removed by Filter'?: number; Plans?: PlanNode[] };
  const rowsRead = (node: PlanNode, into: Record<string, number> = {}, bitmapOf?: string) => {
    const table = node['Node Type'] === 'Bitmap Index Scan' ? bitmapOf : node['Node Type'] === 'Bitmap Heap Scan' ? undefined : node['Relation Name'];
    if (table) into[table] = (into[table] ?? 0) + (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0)) * node['Actual Loops'];
    for (const child of node.Plans ?? []) rowsRead(child, into, node['Node Type'] === 'Bitmap Heap Scan' ? node['Relation Name'] : bitmapOf);
    return into;
  };
  /** the statement a read runs, explained instead (its plan comes back as its row) */
  const explaining = { query: (q: { text: string }) => pool.query({ ...q, text: `EXPLAIN (ANALYZE, FORMAT JSON) ${q.text}` }) } as unknown as Queryable;
  const planOf = (row: unknown) => rowsRead((row as { 'QUERY PLAN': [{ Plan: PlanNode }] })['QUERY PLAN'][0].Plan);
  const streaks: StreakUpdate = { streakCurrent: 1, streakMax: 1, streakLastDate: '2026-01-01', streakShieldUsedMonth: null, questStreakCurrent: 0, questStreakMax: 0, questStreakLastDate: null };

  it('reads no more completions than the highest threshold still locked, however long the history (EXPLAIN ANALYZE)', async () => {
    const u = await user();
    await complete(u, 1_500);
    await uncounted(u, 500, 'NORMAL');
    // others' histories beside it, as in any database with more than a few users; then what autovacuum would do
    for (let i = 0; i < 40; i++) await complete(await user(), 300);
    await pool.query('VACUUM ANALYZE tasks.tasks, tasks.task_completions');
    const cap = Math.max(...TASKS.map((t) => t.atLeast));
    for (const read of [() => achievementStats(explaining, u), () => setStreaksAndReadStats(explaining, u, '2026-01-01', streaks)]) {
      const rows = planOf(await read());
      // 2,500 completions: the count stops at 1,000; the quest and HIGH probes find none without reading any
      expect(rows.task_completions ?? 0, JSON.stringify(rows)).toBeLessThanOrEqual(cap);
      expect(rows.tasks ?? 0, JSON.stringify(rows)).toBe(0);
    }
    await unlock(u);
    expect(await achievementStats(pool, u)).toMatchObject({ tasksCapped: 0, questsCapped: 0, highCapped: 0 });
    const after = planOf(await achievementStats(explaining, u));
    expect(after.task_completions ?? 0, `every tasks_N unlocked: ${JSON.stringify(after)}`).toBe(0);
  });
});
