import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { tolerant } from './contracts.ts';
import { eventTaskOf, taskEvent, taskEventMessage, taskEventPayload, taskEventTask } from './task-events.ts';
import { task } from './tasks.ts';

const id = '6f1c1f3e-5b7a-4c2e-9d51-0a9a3f1e2b44';
const userId = '0b3f2a90-1c6e-4d1b-8f3e-2a7c5d9e1f00';
const createdAt = new Date('2026-12-01T08:00:00.000Z');
const now = new Date('2026-12-02T09:30:00.000Z');

describe('the task event payload: derived from the task, made by one mapper', () => {
  it('carries exactly the spec’s fields of a task today, completedAt only on task.completed', () => {
    const source = { id, userId, title: 'Write report', type: 'ONE_TIME', priority: 'HIGH', dueDate: '2026-12-24', notes: 'private', coinValue: 3, createdAt } as const;
    const created = taskEvent('task.created', source, { now });
    expect(created).toEqual({
      userId,
      payload: {
        event: 'task.created',
        timestamp: now.toISOString(),
        task: expect.objectContaining({ id, title: 'Write report', type: 'ONE_TIME', priority: 'HIGH', topicId: null, dueDate: '2026-12-24', completedAt: null, createdAt: createdAt.toISOString() }),
      },
    });
    // and the fields added to tasks since, with their defaults
    expect(created.payload.task).toMatchObject({ parentId: null, dueTime: null });
    expect(created.payload.task).not.toHaveProperty('notes');
    expect(created.payload.task).not.toHaveProperty('userId');
    expect(taskEvent('task.completed', source, { now }).payload.task.completedAt).toBe(now.toISOString());
    expect(() => taskEventMessage.parse(created)).not.toThrow();
  });

  it('dates a RECURRING task’s event by its next occurrence', () => {
    const recurring = taskEvent('task.updated', { id, userId, title: 'Water plants', type: 'RECURRING', priority: 'NORMAL', dueDate: '2026-11-01', nextDueDate: '2026-12-03', createdAt });
    expect(recurring.payload.task.dueDate).toBe('2026-12-03');
  });

  it('takes a field added to the task into the payload without an edit, with its tolerant default for an older receiver', () => {
    // what a contributor adding `location` to `task` does: nothing else
    const payloadTask = eventTaskOf(task.extend({ location: z.string().nullable() }));
    expect(Object.keys(payloadTask.shape)).toEqual([...Object.keys(taskEventTask.shape), 'location']);
    // an event of the release before (no location) reads in the new receiver as location: null
    const old = taskEvent('task.created', { id, userId, title: 't', type: 'ONE_TIME', priority: 'NORMAL', createdAt }, { now }).payload;
    expect(tolerant(payloadTask).parse(old.task)).toMatchObject({ location: null });
    // and the new event reads in the old receiver, the unknown key ignored
    expect(tolerant(taskEventPayload).parse({ ...old, task: { ...old.task, location: 'Berlin' } }).task).toEqual(old.task);
  });
});
