import { describe, expect, it } from 'vitest';
import { createBody, parseLine } from '../src/lib/quickadd.ts';

// The phrases themselves are tested in proto/src/calendar/phrases.test.ts (the corpus); this is what
// quick add sends for a parse. 2026-11-18 is a Wednesday.
const TODAY = '2026-11-18';
const topics = [
  { id: '00000000-0000-4000-8000-000000000001', title: 'Home' },
  { id: '00000000-0000-4000-8000-000000000002', title: 'Work projects' },
];

describe('quick add create body', () => {
  it('plain text is just a title', () => {
    expect(createBody(parseLine('  Buy milk  ', TODAY))).toEqual({ title: 'Buy milk' });
  });

  it('bug 4: "Pay rent monthly on the 1st" is a schedule on the 1st, not a one-time task', () => {
    expect(createBody(parseLine('Pay rent monthly on the 1st !high #home', TODAY, topics))).toEqual({
      title: 'Pay rent',
      topicId: topics[0]!.id,
      priority: 'HIGH',
      dueDate: '2026-12-01',
      type: 'RECURRING',
      recurrenceType: 'MONTHLY',
      recurrenceInterval: 1,
      recurrenceFixed: true,
    });
  });

  it('bug 4: "Gym every mon wed fri" repeats on all three days and keeps "Gym" as the title', () => {
    expect(createBody(parseLine('Gym every mon wed fri', TODAY))).toEqual({
      title: 'Gym',
      dueDate: '2026-11-18',
      type: 'RECURRING',
      recurrenceType: 'WEEKDAY',
      recurrenceInterval: 1,
      recurrenceWeekdays: [0, 2, 4],
      recurrenceFixed: true,
    });
  });

  it('an nth weekday carries its week of the month', () => {
    expect(createBody(parseLine('Standup every 2nd tue', TODAY))).toMatchObject({ recurrenceType: 'NTH_WEEKDAY', recurrenceWeekdays: [1], recurrenceWeekOfMonth: 2, dueDate: '2026-12-08' });
  });

  it('the list\'s topic applies unless the line names one', () => {
    expect(createBody(parseLine('Call', TODAY, topics), 'list-topic')).toEqual({ title: 'Call', topicId: 'list-topic' });
    expect(createBody(parseLine('Call #work', TODAY, topics), 'list-topic')).toMatchObject({ topicId: topics[1]!.id });
  });

  it('a time of day and reminders go with the task (the reminders contract)', () => {
    const now = new Date('2026-11-18T10:00:00Z');
    expect(createBody(parseLine('Dentist Dec 12 at 9am remind me 1 hour before', TODAY, [], now))).toEqual({ title: 'Dentist', dueDate: '2026-12-12', dueTime: '09:00', reminders: [{ beforeDueMinutes: 60 }] });
    const inTwoHours = createBody(parseLine('Call mom remind me in 2 hours', TODAY, [], now));
    expect(inTwoHours).toEqual({ title: 'Call mom', reminders: [{ at: '2026-11-18T12:00:00.000Z' }] });
  });

  it('what was not understood stays in the title', () => {
    expect(createBody(parseLine('Water every blue moon', TODAY))).toEqual({ title: 'Water every blue moon' });
  });
});
