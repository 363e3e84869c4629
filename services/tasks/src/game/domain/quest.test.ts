import { describe, expect, it } from 'vitest';
import { blockedTaskIds, canPostpone, postponedDates, selectQuest, type QuestCandidate } from './quest.ts';

const TODAY = '2026-05-10';
let seq = 0;
function task(over: Partial<QuestCandidate> & { id: string }): QuestCandidate {
  seq++;
  return {
    type: 'ONE_TIME',
    priority: 'NORMAL',
    topicId: null,
    parentId: null,
    topicSequential: false,
    dueDate: null,
    nextDueDate: null,
    completed: false,
    snoozedUntil: null,
    pausedAt: null,
    pausedUntil: null,
    energyLevel: null,
    sortOrder: seq,
    createdAt: `2026-01-01T00:00:${String(seq % 60).padStart(2, '0')}Z`,
    ...over,
  };
}
const pick = (tasks: QuestCandidate[], over: Partial<Parameters<typeof selectQuest>[1]> = {}) =>
  selectQuest(tasks, { today: TODAY, energy: null, random: () => 0, ...over });

describe('daily quest tiers', () => {
  const overdueOld = task({ id: 'overdue-old', dueDate: '2026-05-01' });
  const overdueNew = task({ id: 'overdue-new', dueDate: '2026-05-08' });
  const high = task({ id: 'high', priority: 'HIGH', topicId: 't1' });
  const highNoTopic = task({ id: 'high-no-topic', priority: 'HIGH' });
  const recurring = task({ id: 'rec', type: 'RECURRING', nextDueDate: TODAY });
  const recurringLater = task({ id: 'rec-later', type: 'RECURRING', nextDueDate: '2026-05-11' });
  const plain = task({ id: 'plain' });
  const eligible = task({ id: 'eligible', type: 'DAILY_ELIGIBLE' });

  it('tier 1: the oldest overdue non-recurring task', () => {
    expect(pick([plain, high, recurring, overdueNew, overdueOld])).toEqual({ taskId: 'overdue-old', tier: 'overdue', energyMatched: true });
  });
  it('does not treat an overdue recurring task as tier 1', () => {
    const oldRecurring = task({ id: 'rec-old', type: 'RECURRING', dueDate: '2026-04-01', nextDueDate: '2026-04-01' });
    expect(pick([oldRecurring, plain])).toMatchObject({ taskId: 'rec-old', tier: 'recurring-due' });
  });
  it('tier 2: a HIGH-priority task in a topic (a topic-less HIGH task is not tier 2)', () => {
    expect(pick([plain, highNoTopic, recurring, high])).toMatchObject({ taskId: 'high', tier: 'high-priority' });
  });
  it('tier 3: a recurring task due today or earlier, never one due later', () => {
    expect(pick([plain, recurringLater, recurring])).toMatchObject({ taskId: 'rec', tier: 'recurring-due' });
    expect(pick([recurringLater])).toBeNull();
  });
  it('tier 4: a random ONE_TIME or DAILY_ELIGIBLE task, using the injected random source', () => {
    expect(pick([plain, eligible], { random: () => 0 })).toMatchObject({ taskId: 'plain', tier: 'random' });
    expect(pick([plain, eligible], { random: () => 0.99 })).toMatchObject({ taskId: 'eligible', tier: 'random' });
  });
  it('skips completed tasks but keeps recurring ones (they never complete)', () => {
    expect(pick([task({ id: 'done', completed: true, dueDate: '2026-05-01' })])).toBeNull();
  });
  it('returns null with nothing eligible', () => {
    expect(pick([])).toBeNull();
  });
  it('honours the exclusion set used by a re-roll', () => {
    expect(pick([overdueOld, overdueNew], { exclude: new Set(['overdue-old']) })).toMatchObject({ taskId: 'overdue-new' });
  });
  it('re-rolls walk through the candidates instead of alternating between two (issue 55)', () => {
    const third = task({ id: 'overdue-third', dueDate: '2026-05-09' });
    const all = [overdueOld, overdueNew, third];
    // quest overdue-old, re-rolled to overdue-new, re-rolled again: not back to overdue-old
    expect(pick(all, { exclude: new Set(['overdue-new']), rerolledAway: new Set(['overdue-old']) })).toMatchObject({ taskId: 'overdue-third' });
    // every other task was re-rolled away already: one of them comes back rather than no quest
    expect(pick(all, { exclude: new Set(['overdue-third']), rerolledAway: new Set(['overdue-old', 'overdue-new']) })).toMatchObject({ taskId: 'overdue-old' });
  });
});

describe('daily quest filters', () => {
  it('skips snoozed tasks until the snooze ends', () => {
    const snoozed = task({ id: 'snoozed', dueDate: '2026-05-01', snoozedUntil: '2026-05-11' });
    const other = task({ id: 'other' });
    expect(pick([snoozed, other])).toMatchObject({ taskId: 'other' });
    expect(pick([task({ ...snoozed, snoozedUntil: TODAY }), other])).toMatchObject({ taskId: 'snoozed' });
  });
  it('skips paused tasks (open-ended or until a later date)', () => {
    const open = task({ id: 'paused', dueDate: '2026-05-01', pausedAt: '2026-05-01T00:00:00Z' });
    const until = task({ id: 'paused-until', dueDate: '2026-05-02', pausedAt: '2026-05-01T00:00:00Z', pausedUntil: '2026-05-12' });
    const ended = task({ id: 'pause-ended', dueDate: '2026-05-03', pausedAt: '2026-05-01T00:00:00Z', pausedUntil: TODAY });
    expect(pick([open, until, ended])).toMatchObject({ taskId: 'pause-ended' });
  });
  it('blocks all but the first open task of a sequential topic', () => {
    const first = task({ id: 'first', topicId: 'seq', topicSequential: true, sortOrder: 1 });
    const second = task({ id: 'second', topicId: 'seq', topicSequential: true, sortOrder: 2, dueDate: '2026-05-01' });
    expect([...blockedTaskIds([first, second], TODAY)]).toEqual(['second']);
    expect(pick([first, second])).toMatchObject({ taskId: 'first', tier: 'random' });
    // a completed first task unblocks the next
    expect(pick([{ ...first, completed: true }, second])).toMatchObject({ taskId: 'second', tier: 'overdue' });
  });
  it('does not block in a non-sequential topic', () => {
    const a = task({ id: 'a', topicId: 'free' });
    const b = task({ id: 'b', topicId: 'free' });
    expect(blockedTaskIds([a, b], TODAY).size).toBe(0);
  });
  it('lets a snoozed task not block the tasks after it', () => {
    const first = task({ id: 'first', topicId: 'seq', topicSequential: true, sortOrder: 1, snoozedUntil: '2026-05-20' });
    const second = task({ id: 'second', topicId: 'seq', topicSequential: true, sortOrder: 2 });
    const third = task({ id: 'third', topicId: 'seq', topicSequential: true, sortOrder: 3 });
    expect([...blockedTaskIds([first, second, third], TODAY)]).toEqual(['third']);
    expect(pick([first, second, third])).toMatchObject({ taskId: 'second' });
  });
});

describe('daily quest energy match', () => {
  it('prefers a task of the current energy (or untagged) within the tier', () => {
    const hi = task({ id: 'hi', dueDate: '2026-05-01', energyLevel: 'HIGH' });
    const lo = task({ id: 'lo', dueDate: '2026-05-05', energyLevel: 'LOW' });
    expect(pick([hi, lo], { energy: 'LOW' })).toEqual({ taskId: 'lo', tier: 'overdue', energyMatched: true });
    expect(pick([hi, lo], { energy: 'HIGH' })).toEqual({ taskId: 'hi', tier: 'overdue', energyMatched: true });
  });
  it('falls back to any energy within the same tier before a lower tier', () => {
    const hi = task({ id: 'hi', dueDate: '2026-05-01', energyLevel: 'HIGH' });
    const lowPlain = task({ id: 'low-plain', energyLevel: 'LOW' });
    expect(pick([hi, lowPlain], { energy: 'LOW' })).toEqual({ taskId: 'hi', tier: 'overdue', energyMatched: false });
  });
  it('treats an untagged task as matching', () => {
    const untagged = task({ id: 'untagged', dueDate: '2026-05-05' });
    const hi = task({ id: 'hi', dueDate: '2026-05-01', energyLevel: 'HIGH' });
    expect(pick([hi, untagged], { energy: 'MEDIUM' })).toMatchObject({ taskId: 'untagged', energyMatched: true });
  });
});

describe('subtasks and the quest: a parent with open subtasks is picked as its next subtask', () => {
  it('never picks the parent: the quest is its first open subtask in order', () => {
    const parent = task({ id: 'parent', dueDate: '2026-05-01' });
    const s1 = task({ id: 's1', parentId: 'parent', completed: true });
    const s2 = task({ id: 's2', parentId: 'parent' });
    const s3 = task({ id: 's3', parentId: 'parent' });
    expect(pick([s3, parent, s2, s1])).toEqual({ taskId: 's2', tier: 'overdue', energyMatched: true });
  });
  it('a parent whose subtasks are all done is picked itself (completing it is what is left)', () => {
    const parent = task({ id: 'parent', dueDate: '2026-05-01' });
    expect(pick([parent, task({ id: 's1', parentId: 'parent', completed: true })])).toMatchObject({ taskId: 'parent' });
  });
  it('skips snoozed and paused subtasks for the next one; all of them snoozed leaves the parent out today', () => {
    const parent = task({ id: 'parent', priority: 'HIGH', topicId: 't' });
    const snoozed = task({ id: 'snoozed', parentId: 'parent', snoozedUntil: '2026-05-11' });
    const paused = task({ id: 'paused', parentId: 'parent', pausedAt: '2026-05-01T00:00:00Z' });
    const next = task({ id: 'next', parentId: 'parent' });
    expect(pick([parent, snoozed, paused, next])).toMatchObject({ taskId: 'next', tier: 'high-priority' });
    expect(pick([parent, snoozed, paused])).toBeNull();
  });
  it('an overdue subtask makes its parent overdue (the earliest due date of the parent and its open subtasks)', () => {
    const overdueElsewhere = task({ id: 'other', dueDate: '2026-05-05' });
    const parent = task({ id: 'parent' });
    const first = task({ id: 'first', parentId: 'parent' });
    const late = task({ id: 'late', parentId: 'parent', dueDate: '2026-05-02' });
    expect(pick([overdueElsewhere, parent, first, late])).toEqual({ taskId: 'first', tier: 'overdue', energyMatched: true });
  });
  it('a recurring parent due today is picked as its next subtask', () => {
    const chores = task({ id: 'chores', type: 'RECURRING', nextDueDate: TODAY });
    expect(pick([chores, task({ id: 'vacuum', parentId: 'chores' })])).toMatchObject({ taskId: 'vacuum', tier: 'recurring-due' });
  });
  it('subtasks are never picked on their own: ten steps are one ticket in the random tier', () => {
    const big = task({ id: 'big' });
    const steps = Array.from({ length: 10 }, (_, i) => task({ id: `step${i}`, parentId: 'big' }));
    const small = task({ id: 'small' });
    const picks = new Set([0, 0.3, 0.49, 0.5, 0.7, 0.99].map((r) => pick([big, ...steps, small], { random: () => r })?.taskId));
    expect(picks).toEqual(new Set(['step0', 'small']));
  });
  it("uses the next subtask's energy, and a re-roll away from a subtask moves on", () => {
    const parent = task({ id: 'parent' });
    const tired = task({ id: 'tired', parentId: 'parent', energyLevel: 'LOW' });
    const other = task({ id: 'other', energyLevel: 'HIGH' });
    expect(pick([parent, tired, other], { energy: 'LOW' })).toMatchObject({ taskId: 'tired', energyMatched: true });
    expect(pick([parent, tired, other], { energy: 'LOW', exclude: new Set(['tired']) })).toMatchObject({ taskId: 'other' });
  });
  it('subtasks take no place in a sequential topic: the parent does', () => {
    const first = task({ id: 'first', topicId: 't', topicSequential: true, priority: 'HIGH' });
    const sub = task({ id: 'sub', topicId: 't', topicSequential: true, parentId: 'first' });
    const second = task({ id: 'second', topicId: 't', topicSequential: true, priority: 'HIGH' });
    expect([...blockedTaskIds([first, sub, second], TODAY)]).toEqual(['second']);
    expect(pick([first, sub, second])).toMatchObject({ taskId: 'sub', tier: 'high-priority' });
  });
});

describe('postpone limit', () => {
  it('allows postponing until the daily limit is used', () => {
    expect(canPostpone(0, 1)).toBe(true);
    expect(canPostpone(1, 1)).toBe(false);
    expect(canPostpone(2, 3)).toBe(true);
    expect(canPostpone(3, 3)).toBe(false);
  });
  it('never brings a date forward and never dates an undated task', () => {
    const tomorrow = '2026-05-11';
    expect(postponedDates({ type: 'ONE_TIME', dueDate: '2026-05-01', nextDueDate: null }, tomorrow)).toEqual({ snoozedUntil: tomorrow, dueDate: tomorrow, nextDueDate: null });
    expect(postponedDates({ type: 'ONE_TIME', dueDate: '2026-05-27', nextDueDate: null }, tomorrow)).toEqual({ snoozedUntil: tomorrow, dueDate: '2026-05-27', nextDueDate: null });
    expect(postponedDates({ type: 'DAILY_ELIGIBLE', dueDate: null, nextDueDate: null }, tomorrow)).toEqual({ snoozedUntil: tomorrow, dueDate: null, nextDueDate: null });
    expect(postponedDates({ type: 'RECURRING', dueDate: '2026-01-01', nextDueDate: '2026-05-10' }, tomorrow)).toEqual({ snoozedUntil: tomorrow, dueDate: '2026-01-01', nextDueDate: tomorrow });
    expect(postponedDates({ type: 'RECURRING', dueDate: '2026-01-01', nextDueDate: '2026-06-01' }, tomorrow)).toEqual({ snoozedUntil: tomorrow, dueDate: '2026-01-01', nextDueDate: '2026-06-01' });
  });
});
