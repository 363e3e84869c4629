/**
 * The minimal SQL of the issue-18 baseline, shared by the HTTP baseline server and the in-process
 * floor so both rows do exactly the same database work: a create is one statement inserting the task
 * and its outbox row, a list is the page query.
 */
import { randomUUID } from 'node:crypto';

export const BASELINE_CREATE = `WITH t AS (
    INSERT INTO tasks.tasks (user_id, title, type, priority, sort_order) VALUES ($1, $2, $3, $4, $5) RETURNING *
  ), o AS (
    INSERT INTO tasks.outbox (id, subject, payload) SELECT $6, 'events.task.created', json_build_object('id', t.id) FROM t
  ) SELECT * FROM t`;

/** A complete (tools/bench/sizing.ts): the open task of this user marked done and its outbox row, one statement. */
export const BASELINE_COMPLETE = `WITH t AS (
    UPDATE tasks.tasks SET completed_at = now(), updated_at = now() WHERE id = $1 AND user_id = $2 AND completed_at IS NULL RETURNING *
  ), o AS (
    INSERT INTO tasks.outbox (id, subject, payload) SELECT $3, 'events.task.completed', json_build_object('id', t.id) FROM t
  ) SELECT * FROM t`;

export const BASELINE_LIST = 'SELECT * FROM tasks.tasks WHERE user_id = $1 ORDER BY sort_order, created_at, id LIMIT 50';

export const baselineCreateValues = (userId: string, title: string, order: number, type = 'ONE_TIME', priority = 'NORMAL'): unknown[] => [userId, title, type, priority, order, randomUUID()];
