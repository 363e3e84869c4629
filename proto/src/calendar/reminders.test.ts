import { describe, expect, it } from 'vitest';
import { dueInstant, localInstant, localTime, reminderInstants, reminderKey, snoozedReminders, upcomingReminders, type ReminderTask } from './reminders.ts';

const task = (t: Partial<ReminderTask>): ReminderTask => ({ type: 'ONE_TIME', dueDate: null, nextDueDate: null, dueTime: null, reminders: [], ...t });
const iso = (d: Date | null) => d?.toISOString() ?? null;

describe('localInstant', () => {
  it('a wall-clock time in a zone, winter and summer', () => {
    expect(iso(localInstant('2026-01-15', '09:00', 'Europe/Berlin'))).toBe('2026-01-15T08:00:00.000Z');
    expect(iso(localInstant('2026-07-15', '09:00', 'Europe/Berlin'))).toBe('2026-07-15T07:00:00.000Z');
    expect(iso(localInstant('2026-07-15', '09:00', 'UTC'))).toBe('2026-07-15T09:00:00.000Z');
    expect(iso(localInstant('2026-07-15', '23:59', 'Pacific/Kiritimati'))).toBe('2026-07-15T09:59:00.000Z'); // +14
    expect(iso(localInstant('2026-07-15', '00:00', 'Pacific/Pago_Pago'))).toBe('2026-07-15T11:00:00.000Z'); // -11
    expect(iso(localInstant('2026-07-15', '09:00', 'Asia/Kolkata'))).toBe('2026-07-15T03:30:00.000Z'); // +5:30
  });

  it('DST: the days of the change themselves, either side of it', () => {
    // Europe/Berlin springs forward on 2026-03-29 at 02:00 → 03:00, falls back on 2026-10-25 at 03:00 → 02:00
    expect(iso(localInstant('2026-03-29', '01:30', 'Europe/Berlin'))).toBe('2026-03-29T00:30:00.000Z');
    expect(iso(localInstant('2026-03-29', '03:30', 'Europe/Berlin'))).toBe('2026-03-29T01:30:00.000Z');
    expect(iso(localInstant('2026-10-25', '09:00', 'Europe/Berlin'))).toBe('2026-10-25T08:00:00.000Z');
    expect(iso(localInstant('2026-10-24', '09:00', 'Europe/Berlin'))).toBe('2026-10-24T07:00:00.000Z');
    // America/New_York: 2026-03-08 02:00 → 03:00
    expect(iso(localInstant('2026-03-08', '09:00', 'America/New_York'))).toBe('2026-03-08T13:00:00.000Z');
    expect(iso(localInstant('2026-03-07', '09:00', 'America/New_York'))).toBe('2026-03-07T14:00:00.000Z');
  });

  it('DST gap: a time the clock skips is moved later by the gap; a repeated time is its first occurrence', () => {
    expect(iso(localInstant('2026-03-29', '02:30', 'Europe/Berlin'))).toBe('2026-03-29T01:30:00.000Z'); // = 03:30 CEST
    expect(iso(localInstant('2026-10-25', '02:30', 'Europe/Berlin'))).toBe('2026-10-25T00:30:00.000Z'); // 02:30 CEST, not CET
    // Lord Howe shifts by 30 minutes
    expect(iso(localInstant('2026-10-04', '02:15', 'Australia/Lord_Howe'))).toBe('2026-10-03T15:45:00.000Z'); // 02:45 +11
  });
});

it('localTime: HH:MM on the wall clock of a zone', () => {
  expect(localTime(new Date('2026-07-15T16:05:00Z'), 'Europe/Berlin')).toBe('18:05');
  expect(localTime(new Date('2026-07-15T22:00:00Z'), 'Europe/Berlin')).toBe('00:00');
});

describe('reminder instants', () => {
  it('relative reminders count back from the due date at its time, or at 09:00 without one', () => {
    const t = task({ dueDate: '2026-07-15', dueTime: '18:30', reminders: [{ beforeDueMinutes: 30 }, { beforeDueMinutes: 0 }] });
    expect(reminderInstants(t, 'Europe/Berlin').map((r) => [r.key, iso(r.at)])).toEqual([
      ['before:30', '2026-07-15T16:00:00.000Z'],
      ['before:0', '2026-07-15T16:30:00.000Z'],
    ]);
    expect(iso(dueInstant(task({ dueDate: '2026-07-15' }), 'Europe/Berlin'))).toBe('2026-07-15T07:00:00.000Z');
    expect(reminderInstants(task({ dueDate: '2026-07-15', reminders: [{ beforeDueMinutes: 1440 }] }), 'UTC').map((r) => iso(r.at))).toEqual(['2026-07-14T09:00:00.000Z']);
  });

  it('a relative reminder across a DST change keeps to the local due time', () => {
    // due Monday 09:00 CEST (07:00Z), the day after Berlin's spring change: 1440 minutes of real time before
    const t = task({ dueDate: '2026-03-30', dueTime: '09:00', reminders: [{ beforeDueMinutes: 1440 }] });
    expect(iso(reminderInstants(t, 'Europe/Berlin')[0]!.at)).toBe('2026-03-29T07:00:00.000Z');
  });

  it('RECURRING: relative reminders follow the next occurrence; absolute ones fire once', () => {
    const t = task({ type: 'RECURRING', dueDate: '2026-01-01', nextDueDate: '2026-07-20', dueTime: '07:00', reminders: [{ beforeDueMinutes: 15 }, { at: '2026-07-01T10:00:00+02:00' }] });
    expect(reminderInstants(t, 'UTC').map((r) => [r.key, iso(r.at)])).toEqual([
      ['before:15', '2026-07-20T06:45:00.000Z'],
      ['at:2026-07-01T08:00:00.000Z', '2026-07-01T08:00:00.000Z'],
    ]);
  });

  it('without a due date a relative reminder has no instant; only future ones are upcoming', () => {
    const t = task({ reminders: [{ beforeDueMinutes: 10 }, { at: '2026-07-01T10:00:00Z' }, { at: '2026-07-03T10:00:00Z' }] });
    expect(reminderInstants(t, 'UTC').map((r) => r.key)).toEqual(['at:2026-07-01T10:00:00.000Z', 'at:2026-07-03T10:00:00.000Z']);
    expect(upcomingReminders(t, 'UTC', new Date('2026-07-02T00:00:00Z')).map((r) => r.key)).toEqual(['at:2026-07-03T10:00:00.000Z']);
  });

  it('one key per reminder, whatever offset the instant was written with', () => {
    expect(reminderKey({ at: '2026-07-01T12:00:00+02:00' })).toBe(reminderKey({ at: '2026-07-01T10:00:00Z' }));
    expect(reminderKey({ beforeDueMinutes: 30 })).toBe('before:30');
  });
});

describe('snoozedReminders', () => {
  const now = new Date('2026-07-01T10:00:00Z');
  it('drops fired absolute reminders and adds one an hour from now', () => {
    expect(snoozedReminders([{ at: '2026-07-01T09:59:00Z' }, { beforeDueMinutes: 5 }, { at: '2026-07-02T00:00:00Z' }], now, 60)).toEqual([
      { beforeDueMinutes: 5 },
      { at: '2026-07-02T00:00:00Z' },
      { at: '2026-07-01T11:00:00.000Z' },
    ]);
  });
  it('null when five reminders are still to come', () => {
    const five = [1, 2, 3, 4, 5].map((m) => ({ beforeDueMinutes: m }));
    expect(snoozedReminders(five, now, 60)).toBeNull();
    expect(snoozedReminders(null, now, 60)).toEqual([{ at: '2026-07-01T11:00:00.000Z' }]);
  });
});
