import { describe, expect, it } from 'vitest';
import { describeRecurrence, parseQuickAdd, parseWhen, type QuickAddParse } from './phrases.ts';

/**
 * The quick-add corpus: each phrase with what it must mean, on Wednesday 2026-11-18 at 11:00 in
 * Berlin (10:00 UTC). A summary reads: "title" | due date | at time | rule TYPE/interval[weekdays]#nth
 * (rolling = counted from completion) | #topic id | !priority | reminders | ?"not understood".
 */
const ctx = {
  today: '2026-11-18',
  now: new Date('2026-11-18T10:00:00Z'),
  timeZone: 'Europe/Berlin',
  topics: [
    { id: 'home', title: 'Home' },
    { id: 'fam', title: 'Family' },
    { id: 'workp', title: 'Work projects' },
    { id: 'work', title: 'Work' },
  ],
};

function summary(p: QuickAddParse): string {
  const out = [JSON.stringify(p.title)];
  if (p.dueDate) out.push(`due ${p.dueDate}`);
  if (p.dueTime) out.push(`at ${p.dueTime}`);
  if (p.recurrence) {
    const r = p.recurrence;
    out.push(`${r.type}/${r.interval}${r.weekdays.length ? `[${r.weekdays.join(',')}]` : ''}${r.weekOfMonth !== null ? `#${r.weekOfMonth}` : ''}${r.fixed ? '' : ' rolling'}`);
  }
  if (p.topic) out.push(`#${p.topic.id ?? p.topic.name}`);
  if (p.priority) out.push(`!${p.priority}`);
  for (const r of p.reminders) out.push('at' in r ? `remind ${r.at}` : `remind -${r.beforeDueMinutes}m`);
  for (const n of p.notUnderstood) out.push(`?${JSON.stringify(n.text)}`);
  return out.join(' | ');
}

const CORPUS: Array<[string, string]> = [
  ["Pay rent monthly on the 1st", "\"Pay rent\" | due 2026-12-01 | MONTHLY/1"],
  ["Pay rent every month on the 1st", "\"Pay rent\" | due 2026-12-01 | MONTHLY/1"],
  ["Gym every mon wed fri", "\"Gym\" | due 2026-11-18 | WEEKDAY/1[0,2,4]"],
  ["Dec 12", "\"\" | due 2026-12-12"],
  ["daily", "\"\" | due 2026-11-18 | INTERVAL/1"],
  ["at 9am", "\"\" | due 2026-11-19 | at 09:00"],
  ["every 2nd tue", "\"\" | due 2026-12-08 | NTH_WEEKDAY/1[1]#2"],
  ["weekdays", "\"\" | due 2026-11-18 | WEEKDAY/1[0,1,2,3,4]"],
  ["in 3 days", "\"\" | due 2026-11-21"],
  ["end of month", "\"\" | due 2026-11-30"],
  ["tomorrow 18:30", "\"\" | due 2026-11-19 | at 18:30"],
  ["remind me in 2 hours", "\"\" | remind 2026-11-18T12:00:00.000Z"],
  ["Call grandma sunday #fam", "\"Call grandma\" | due 2026-11-22 | #fam"],
  ["Buy milk", "\"Buy milk\""],
  ["  Buy milk  ", "\"Buy milk\""],
  ["Buy a sat nav", "\"Buy a sat nav\""],
  ["Sun cream", "\"Sun cream\""],
  ["Wed anniversary gift", "\"Wed anniversary gift\""],
  ["March on the capital", "\"March on the capital\""],
  ["Call Tom", "\"Call Tom\""],
  ["Watch 24", "\"Watch 24\""],
  ["Fix bug 1234", "\"Fix bug 1234\""],
  ["Book a table for 4", "\"Book a table for 4\""],
  ["Order 3 pizzas", "\"Order 3 pizzas\""],
  ["Room 101 cleanup", "\"Room 101 cleanup\""],
  ["Read 1984", "\"Read 1984\""],
  ["I may go", "\"I may go\""],
  ["Work 3 days", "\"Work 3 days\""],
  ["Do it now", "\"Do it now\""],
  ["Meet at the cafe", "\"Meet at the cafe\""],
  ["Second floor lights", "\"Second floor lights\""],
  ["Buy 2x4 lumber", "\"Buy 2x4 lumber\""],
  ["today", "\"\" | due 2026-11-18"],
  ["tod", "\"\" | due 2026-11-18"],
  ["tomorrow", "\"\" | due 2026-11-19"],
  ["tmr", "\"\" | due 2026-11-19"],
  ["Call the bank tomorrow 9am", "\"Call the bank\" | due 2026-11-19 | at 09:00"],
  ["Call the bank tomorrow at 9am", "\"Call the bank\" | due 2026-11-19 | at 09:00"],
  ["Call the bank tomorrow at 9", "\"Call the bank\" | due 2026-11-19 | at 09:00"],
  ["tomorrow noon", "\"\" | due 2026-11-19 | at 12:00"],
  ["tonight", "\"\" | due 2026-11-18"],
  ["Taxes next fri", "\"Taxes\" | due 2026-11-20"],
  ["Taxes on Friday", "\"Taxes\" | due 2026-11-20"],
  ["Taxes friday", "\"Taxes\" | due 2026-11-20"],
  ["Taxes this fri", "\"Taxes\" | due 2026-11-20"],
  ["Taxes @fri", "\"Taxes\" | due 2026-11-20"],
  ["Taxes @wed", "\"Taxes\" | due 2026-11-25"],
  ["Taxes @monday", "\"Taxes\" | due 2026-11-23"],
  ["Taxes on mon", "\"Taxes\" | due 2026-11-23"],
  ["Taxes next week", "\"Taxes\" | due 2026-11-25"],
  ["Taxes next month", "\"Taxes\" | due 2026-12-18"],
  ["Taxes in 3 days", "\"Taxes\" | due 2026-11-21"],
  ["Taxes in 2 weeks", "\"Taxes\" | due 2026-12-02"],
  ["Taxes in a week", "\"Taxes\" | due 2026-11-25"],
  ["Taxes in 1 day", "\"Taxes\" | due 2026-11-19"],
  ["Report @2026-12-01", "\"Report\" | due 2026-12-01"],
  ["Report 2026-12-01", "\"Report\" | due 2026-12-01"],
  ["Report Dec 1", "\"Report\" | due 2026-12-01"],
  ["Report December 1st", "\"Report\" | due 2026-12-01"],
  ["Report 1 Dec", "\"Report\" | due 2026-12-01"],
  ["Report Jan 5 2027", "\"Report\" | due 2027-01-05"],
  ["Report 12/25", "\"Report\" | due 2026-12-25"],
  ["Report on Dec 12 at 3pm", "\"Report\" | due 2026-12-12 | at 15:00"],
  ["Report Dec 12 at 15:00", "\"Report\" | due 2026-12-12 | at 15:00"],
  ["Report by friday", "\"Report\" | due 2026-11-20"],
  ["Report due friday", "\"Report\" | due 2026-11-20"],
  ["Report due Dec 3", "\"Report\" | due 2026-12-03"],
  ["Dentist at 14:30", "\"Dentist\" | due 2026-11-18 | at 14:30"],
  ["Dentist 14:30", "\"Dentist\" | due 2026-11-18 | at 14:30"],
  ["Dentist at 2pm", "\"Dentist\" | due 2026-11-18 | at 14:00"],
  ["Dentist 2 pm", "\"Dentist\" | due 2026-11-18 | at 14:00"],
  ["Dentist friday 3pm", "\"Dentist\" | due 2026-11-20 | at 15:00"],
  ["Dentist friday at 3pm", "\"Dentist\" | due 2026-11-20 | at 15:00"],
  ["Dentist Dec 12 at 9am", "\"Dentist\" | due 2026-12-12 | at 09:00"],
  ["Dentist Dec 12 dentist at 9am", "\"Dentist dentist\" | due 2026-12-12 | at 09:00"],
  ["Dentist at 9am on friday", "\"Dentist\" | due 2026-11-20 | at 09:00"],
  ["Party this weekend", "\"Party\" | due 2026-11-21"],
  ["Party end of month", "\"Party\" | due 2026-11-30"],
  ["Party in 3 weeks", "\"Party\" | due 2026-12-09"],
  ["Pay rent monthly", "\"Pay rent\" | due 2026-11-18 | MONTHLY/1"],
  ["Pay rent every month", "\"Pay rent\" | due 2026-11-18 | MONTHLY/1"],
  ["Pay rent every month on the 15th", "\"Pay rent\" | due 2026-12-15 | MONTHLY/1"],
  ["Pay rent every month on the 31st", "\"Pay rent\" | due 2026-12-31 | MONTHLY/1"],
  ["Pay rent on the 1st of every month", "\"Pay rent\" | due 2026-12-01 | MONTHLY/1"],
  ["Pay rent the 1st of each month", "\"Pay rent\" | due 2026-12-01 | MONTHLY/1"],
  ["Pay rent every 1st", "\"Pay rent\" | due 2026-12-01 | MONTHLY/1"],
  ["Pay rent every 15th of the month", "\"Pay rent\" | due 2026-12-15 | MONTHLY/1"],
  ["Pay rent monthly on the 2nd tuesday", "\"Pay rent\" | due 2026-12-08 | NTH_WEEKDAY/1[1]#2"],
  ["Pay rent every 3 months on the 15th", "\"Pay rent\" | due 2026-12-15 | MONTHLY/3"],
  ["Pay rent every other month", "\"Pay rent\" | due 2026-11-18 | MONTHLY/2"],
  ["Pay rent every 2 months", "\"Pay rent\" | due 2026-11-18 | MONTHLY/2"],
  ["Gym every mon", "\"Gym\" | due 2026-11-23 | WEEKDAY/1[0]"],
  ["Gym every monday", "\"Gym\" | due 2026-11-23 | WEEKDAY/1[0]"],
  ["Gym every mon, wed and fri", "\"Gym\" | due 2026-11-18 | WEEKDAY/1[0,2,4]"],
  ["Gym every monday and thursday", "\"Gym\" | due 2026-11-19 | WEEKDAY/1[0,3]"],
  ["Gym every tue/thu", "\"Gym\" | due 2026-11-19 | WEEKDAY/1[1,3]"],
  ["Gym every mon & wed", "\"Gym\" | due 2026-11-18 | WEEKDAY/1[0,2]"],
  ["Gym mondays", "\"Gym\" | due 2026-11-23 | WEEKDAY/1[0]"],
  ["Gym on mondays and thursdays", "\"Gym\" | due 2026-11-19 | WEEKDAY/1[0,3]"],
  ["Gym every weekday", "\"Gym\" | due 2026-11-18 | WEEKDAY/1[0,1,2,3,4]"],
  ["Gym every workday", "\"Gym\" | due 2026-11-18 | WEEKDAY/1[0,1,2,3,4]"],
  ["Gym weekdays", "\"Gym\" | due 2026-11-18 | WEEKDAY/1[0,1,2,3,4]"],
  ["Gym on weekdays", "\"Gym\" | due 2026-11-18 | WEEKDAY/1[0,1,2,3,4]"],
  ["Gym every weekend", "\"Gym\" | due 2026-11-21 | WEEKDAY/1[5,6]"],
  ["Gym weekends", "\"Gym\" | due 2026-11-21 | WEEKDAY/1[5,6]"],
  ["Gym weekly", "\"Gym\" | due 2026-11-18 | WEEKDAY/1[2]"],
  ["Gym every week", "\"Gym\" | due 2026-11-18 | WEEKDAY/1[2]"],
  ["Gym every week on friday", "\"Gym\" | due 2026-11-20 | WEEKDAY/1[4]"],
  ["Gym weekly on mon and thu", "\"Gym\" | due 2026-11-19 | WEEKDAY/1[0,3]"],
  ["Gym every 2 weeks", "\"Gym\" | due 2026-11-18 | WEEKDAY/2[2]"],
  ["Gym every 2 weeks on tue", "\"Gym\" | due 2026-11-24 | WEEKDAY/2[1]"],
  ["Gym every other week", "\"Gym\" | due 2026-11-18 | WEEKDAY/2[2]"],
  ["Gym every other fri", "\"Gym\" | due 2026-11-20 | WEEKDAY/2[4]"],
  ["Gym every fortnight", "\"Gym\" | due 2026-11-18 | WEEKDAY/2[2]"],
  ["Gym *weekly", "\"Gym\" | due 2026-11-18 | WEEKDAY/1[2]"],
  ["Gym every week friday", "\"Gym\" | due 2026-11-20 | WEEKDAY/1[4]"],
  ["Gym *weekly @fri", "\"Gym\" | due 2026-11-20 | WEEKDAY/1[4]"],
  ["Standup every 2nd tue", "\"Standup\" | due 2026-12-08 | NTH_WEEKDAY/1[1]#2"],
  ["Standup every 2nd tuesday of the month", "\"Standup\" | due 2026-12-08 | NTH_WEEKDAY/1[1]#2"],
  ["Standup every last fri", "\"Standup\" | due 2026-11-27 | NTH_WEEKDAY/1[4]#-1"],
  ["Standup every last friday of each month", "\"Standup\" | due 2026-11-27 | NTH_WEEKDAY/1[4]#-1"],
  ["Standup every first monday", "\"Standup\" | due 2026-12-07 | NTH_WEEKDAY/1[0]#1"],
  ["Standup on the 3rd wednesday of every month", "\"Standup\" | due 2026-11-18 | NTH_WEEKDAY/1[2]#3"],
  ["Standup monthly on the last friday", "\"Standup\" | due 2026-11-27 | NTH_WEEKDAY/1[4]#-1"],
  ["Standup every 5th mon", "\"Standup every 5th mon\" | ?\"every 5th mon\""],
  ["Water daily", "\"Water\" | due 2026-11-18 | INTERVAL/1"],
  ["Water every day", "\"Water\" | due 2026-11-18 | INTERVAL/1"],
  ["Water everyday", "\"Water\" | due 2026-11-18 | INTERVAL/1"],
  ["Water *daily", "\"Water\" | due 2026-11-18 | INTERVAL/1"],
  ["Water each day", "\"Water\" | due 2026-11-18 | INTERVAL/1"],
  ["Water every other day", "\"Water\" | due 2026-11-18 | INTERVAL/2"],
  ["Water every 3 days", "\"Water\" | due 2026-11-18 | INTERVAL/3"],
  ["Water every! 3 days", "\"Water\" | due 2026-11-18 | INTERVAL/3 rolling"],
  ["Water every 3 days after completion", "\"Water\" | due 2026-11-18 | INTERVAL/3 rolling"],
  ["Water every two days", "\"Water\" | due 2026-11-18 | INTERVAL/2"],
  ["Water every 10 days", "\"Water\" | due 2026-11-18 | INTERVAL/10"],
  ["Water every 2 hours", "\"Water every 2 hours\" | ?\"every 2 hours\""],
  ["Birthday every year on Dec 12", "\"Birthday\" | due 2026-12-12 | YEARLY/1"],
  ["Birthday yearly", "\"Birthday\" | due 2026-11-18 | YEARLY/1"],
  ["Birthday every year", "\"Birthday\" | due 2026-11-18 | YEARLY/1"],
  ["Birthday annually", "\"Birthday\" | due 2026-11-18 | YEARLY/1"],
  ["Birthday every Dec 12", "\"Birthday\" | due 2026-12-12 | YEARLY/1"],
  ["Birthday every 12 Dec", "\"Birthday\" | due 2026-12-12 | YEARLY/1"],
  ["Birthday yearly on 3 March", "\"Birthday\" | due 2027-03-03 | YEARLY/1"],
  ["Birthday every 2 years", "\"Birthday\" | due 2026-11-18 | YEARLY/2"],
  ["Birthday every year on Feb 29", "\"Birthday\" | due 2028-02-29 | YEARLY/1"],
  ["Standup every weekday at 9:30", "\"Standup\" | due 2026-11-19 | at 09:30 | WEEKDAY/1[0,1,2,3,4]"],
  ["Standup daily at 9am", "\"Standup\" | due 2026-11-19 | at 09:00 | INTERVAL/1"],
  ["Standup every mon at 10", "\"Standup\" | due 2026-11-23 | at 10:00 | WEEKDAY/1[0]"],
  ["Gym every mon starting dec 1", "\"Gym\" | due 2026-12-07 | WEEKDAY/1[0]"],
  ["Gym every mon from dec 1", "\"Gym\" | due 2026-12-07 | WEEKDAY/1[0]"],
  ["Gym every week starting friday", "\"Gym\" | due 2026-11-20 | WEEKDAY/1[4]"],
  ["Pay rent monthly starting dec 5", "\"Pay rent\" | due 2026-12-05 | MONTHLY/1"],
  ["Meeting until friday", "\"Meeting until friday\" | ?\"until friday\""],
  ["every blue moon", "\"every blue moon\" | ?\"every blue moon\""],
  ["Water every blue moon", "\"Water every blue moon\" | ?\"every blue moon\""],
  ["Gym every mon until dec 1", "\"Gym until dec 1\" | due 2026-11-23 | WEEKDAY/1[0] | ?\"until dec 1\""],
  ["Mon - Fri", "\"Mon - Fri\" | ?\"Mon - Fri\""],
  ["Call mom !high", "\"Call mom\" | !HIGH"],
  ["Call mom !h", "\"Call mom\" | !HIGH"],
  ["Call mom !!", "\"Call mom\" | !HIGH"],
  ["Call mom p1", "\"Call mom\" | !HIGH"],
  ["Call mom p2", "\"Call mom\" | !NORMAL"],
  ["Call mom p3", "\"Call mom\" | !NORMAL"],
  ["Call mom !normal", "\"Call mom\" | !NORMAL"],
  ["Call mom !someday", "\"Call mom\" | !SOMEDAY"],
  ["Call mom !s", "\"Call mom\" | !SOMEDAY"],
  ["Call mom !low", "\"Call mom\" | !SOMEDAY"],
  ["Call mom !urgent", "\"Call mom !urgent\" | ?\"!urgent\""],
  ["Call mom #home", "\"Call mom\" | #home"],
  ["Call mom #Home", "\"Call mom\" | #home"],
  ["Call mom #ho", "\"Call mom\" | #home"],
  ["Call mom #work projects", "\"Call mom\" | #workp"],
  ["Call mom #work", "\"Call mom\" | #work"],
  ["Call mom #nosuch", "\"Call mom #nosuch\" | ?\"#nosuch\""],
  ["Call mom #fam !high tomorrow", "\"Call mom\" | due 2026-11-19 | #fam | !HIGH"],
  ["#home fix the sink", "\"fix the sink\" | #home"],
  ["Email #nobody about !things", "\"Email #nobody about !things\" | ?\"#nobody\" | ?\"!things\""],
  ["Call mom remind me at 5pm", "\"Call mom\" | remind 2026-11-18T16:00:00.000Z"],
  ["Call mom remind me in 2 hours", "\"Call mom\" | remind 2026-11-18T12:00:00.000Z"],
  ["Call mom remind me in 30 minutes", "\"Call mom\" | remind 2026-11-18T10:30:00.000Z"],
  ["Call mom remind me in an hour", "\"Call mom\" | remind 2026-11-18T11:00:00.000Z"],
  ["Call mom remind me tomorrow at 9", "\"Call mom\" | remind 2026-11-19T08:00:00.000Z"],
  ["Call mom tomorrow at 10 remind me 30 min before", "\"Call mom\" | due 2026-11-19 | at 10:00 | remind -30m"],
  ["Call mom tomorrow at 10 remind me 1 hour before", "\"Call mom\" | due 2026-11-19 | at 10:00 | remind -60m"],
  ["Call mom tomorrow at 10 remind me 15m before", "\"Call mom\" | due 2026-11-19 | at 10:00 | remind -15m"],
  ["Call mom tomorrow at 10 remind me the day before", "\"Call mom\" | due 2026-11-19 | at 10:00 | remind -1440m"],
  ["Call mom remind me 30 min before", "\"Call mom remind me 30 min before\" | ?\"remind me 30 min before\""],
  ["remind me to call mom tomorrow at 9", "\"call mom\" | due 2026-11-19 | at 09:00 | remind -0m"],
  ["remind me to call mom", "\"remind me to call mom\" | ?\"remind me to\""],
  ["Call mom remind me", "\"Call mom remind me\" | ?\"remind me\""],
  ["Call mom reminder at 8pm", "\"Call mom\" | remind 2026-11-18T19:00:00.000Z"],
  ["Call mom remind me at 5pm remind me at 6pm", "\"Call mom\" | remind 2026-11-18T16:00:00.000Z | remind 2026-11-18T17:00:00.000Z"],
  ["Pay rent every month on the 1st !high #home", "\"Pay rent\" | due 2026-12-01 | MONTHLY/1 | #home | !HIGH"],
  ["Standup every 2nd tue #work !high", "\"Standup\" | due 2026-12-08 | NTH_WEEKDAY/1[1]#2 | #work | !HIGH"],
  ["Gym every mon wed fri at 7am #home", "\"Gym\" | due 2026-11-20 | at 07:00 | WEEKDAY/1[0,2,4] | #home"],
  ["Call grandma tomorrow 6pm #fam !high remind me 1 hour before", "\"Call grandma\" | due 2026-11-19 | at 18:00 | #fam | !HIGH | remind -60m"],
  ["Taxes tomorrow friday", "\"Taxes friday\" | due 2026-11-19 | ?\"friday\""],
  ["Taxes tomorrow and friday", "\"Taxes and friday\" | due 2026-11-19 | ?\"friday\""],
  ["Plan trip in March", "\"Plan trip in March\""],
  ["Pay the March invoice", "\"Pay the March invoice\""],
  ["Buy May flowers", "\"Buy May flowers\""],
  ["Call Sat team", "\"Call Sat team\""],
  ["Send invoice on the 1st", "\"Send invoice\" | due 2026-12-01"],
  ["Send invoice the 1st", "\"Send invoice the 1st\""],
  ["Renew passport Jan 2027", "\"Renew passport\" | due 2027-01-01"],
  ["Renew passport January 5", "\"Renew passport\" | due 2027-01-05"],
  ["Renew passport 5 January", "\"Renew passport\" | due 2027-01-05"],
  ["Renew passport 5th of January", "\"Renew passport\" | due 2027-01-05"],
  ["New Year party Dec 31 at 8pm", "\"New Year party\" | due 2026-12-31 | at 20:00"],
  ["Lunch at noon", "\"Lunch\" | due 2026-11-18 | at 12:00"],
  ["Lunch noon tomorrow", "\"Lunch\" | due 2026-11-19 | at 12:00"],
  ["Call at 5", "\"Call\" | due 2026-11-19 | at 05:00"],
  ["Wake up at 6:45am", "\"Wake up\" | due 2026-11-19 | at 06:45"],
  ["Flight tomorrow at 6:05", "\"Flight\" | due 2026-11-19 | at 06:05"],
  ["Flight Dec 24 23:59", "\"Flight\" | due 2026-12-24 | at 23:59"],
  ["Submit report by Dec 3.", "\"Submit report.\" | due 2026-12-03"],
  ["Pay rent every month on the 1st.", "\"Pay rent.\" | due 2026-12-01 | MONTHLY/1"],
  ["Buy milk, eggs, bread tomorrow", "\"Buy milk, eggs, bread\" | due 2026-11-19"],
  ["Buy milk & eggs", "\"Buy milk & eggs\""],
  ["Gym every mon and", "\"Gym and\" | due 2026-11-23 | WEEKDAY/1[0]"],
  ["Clean every", "\"Clean every\" | ?\"every\""],
  ["every", "\"every\" | ?\"every\""],
  ["every day", "\"\" | due 2026-11-18 | INTERVAL/1"],
  ["ev mon", "\"\" | due 2026-11-23 | WEEKDAY/1[0]"],
  ["ev! 2 weeks", "\"\" | due 2026-11-18 | WEEKDAY/2[2] rolling"],
  ["every other", "\"every other\" | ?\"every other\""],
  ["Pay 50% deposit on friday", "\"Pay 50% deposit\" | due 2026-11-20"],
  ["Fix #123 tomorrow", "\"Fix #123\" | due 2026-11-19"],
  ["Read chapter 3 in 2 days", "\"Read chapter 3\" | due 2026-11-20"],
  ["Meet Anna at 5pm tomorrow", "\"Meet Anna\" | due 2026-11-19 | at 17:00"],
  ["Meet Anna tomorrow at 5pm", "\"Meet Anna\" | due 2026-11-19 | at 17:00"],
  ["Meet Anna at 5pm on Dec 12", "\"Meet Anna\" | due 2026-12-12 | at 17:00"],
  ["Call Mike every other week on mon", "\"Call Mike\" | due 2026-11-23 | WEEKDAY/2[0]"],
  ["Take pills every 8 hours", "\"Take pills every 8 hours\" | ?\"every 8 hours\""],
  ["Backup every week on sunday at 23:00", "\"Backup\" | due 2026-11-22 | at 23:00 | WEEKDAY/1[6]"],
  ["Review every last fri of the month at 16:00", "\"Review\" | due 2026-11-27 | at 16:00 | NTH_WEEKDAY/1[4]#-1"],
  ["Clean gutters every 6 months", "\"Clean gutters\" | due 2026-11-18 | MONTHLY/6"],
  ["Clean gutters every 6 months on the 1st", "\"Clean gutters\" | due 2026-12-01 | MONTHLY/6"],
  ["Water plants weekly on sat", "\"Water plants\" | due 2026-11-21 | WEEKDAY/1[5]"],
  ["Mow lawn every sat", "\"Mow lawn\" | due 2026-11-21 | WEEKDAY/1[5]"],
  ["Mow lawn every saturday and sunday", "\"Mow lawn\" | due 2026-11-21 | WEEKDAY/1[5,6]"],
  ["Call dad on his birthday", "\"Call dad on his birthday\""],
  ["Today I learned", "\"I learned\" | due 2026-11-18"],
  ["Tomorrowland tickets", "\"Tomorrowland tickets\""],
  ["Monday.com setup", "\"Monday.com setup\""],
];

describe('the quick-add corpus', () => {
  it(`has at least 200 phrases, each once`, () => {
    expect(CORPUS.length).toBeGreaterThanOrEqual(200);
    expect(new Set(CORPUS.map(([p]) => p)).size).toBe(CORPUS.length);
  });
  it.each(CORPUS)('%s', (phrase, expected) => {
    expect(summary(parseQuickAdd(phrase, ctx))).toBe(expected);
  });
});

describe('the parse', () => {
  it('marks every recognised piece where it was typed, for chips and highlighting', () => {
    const text = 'Gym every mon wed fri at 7am #home !high';
    const r = parseQuickAdd(text, ctx);
    expect(r.parts.map((p) => [p.kind, text.slice(p.start, p.end), p.label])).toEqual([
      ['recurrence', 'every mon wed fri', 'Every Monday, Wednesday and Friday'],
      ['time', 'at 7am', 'At 07:00'],
      ['topic', '#home', 'Topic: Home'],
      ['priority', '!high', 'High priority'],
    ]);
  });

  it('leaves what it did not understand in the title and says why', () => {
    const r = parseQuickAdd('Water every blue moon', ctx);
    expect(r.title).toBe('Water every blue moon');
    expect(r.recurrence).toBeNull();
    expect(r.notUnderstood).toEqual([{ text: 'every blue moon', start: 6, end: 21, hint: expect.stringContaining('editor') }]);
  });

  it('without a topic list, a #topic comes back by name for the caller to resolve', () => {
    expect(parseQuickAdd('Fix sink #home', { today: ctx.today }).topic).toEqual({ name: 'home', id: null });
  });

  it('reads reminder times in the user zone, whatever zone the process runs in', () => {
    const ny = { today: '2026-11-18', now: new Date('2026-11-18T15:00:00Z'), timeZone: 'America/New_York' }; // 10:00 there
    expect(parseQuickAdd('Call remind me at 5pm', ny).reminders).toEqual([{ at: '2026-11-18T22:00:00.000Z' }]);
    expect(parseQuickAdd('Call remind me in 90 minutes', ny).reminders).toEqual([{ at: '2026-11-18T16:30:00.000Z' }]);
    // across the spring DST change in Berlin (2027-03-28, 02:00 → 03:00)
    const spring = { today: '2027-03-27', now: new Date('2027-03-27T20:00:00Z'), timeZone: 'Europe/Berlin' };
    expect(parseQuickAdd('Call remind me tomorrow at 9am', spring).reminders).toEqual([{ at: '2027-03-28T07:00:00.000Z' }]);
  });

  it('a "today" late in the evening is still the user\'s date, not the server\'s', () => {
    const late = { today: '2026-11-18', now: new Date('2026-11-19T04:30:00Z'), timeZone: 'America/Los_Angeles' }; // 20:30 on the 18th there
    expect(parseQuickAdd('Call today', late).dueDate).toBe('2026-11-18');
    expect(parseQuickAdd('Call tomorrow', late).dueDate).toBe('2026-11-19');
  });

  it('keeps at most 5 reminders', () => {
    const r = parseQuickAdd(`Call at 18:00 ${Array.from({ length: 7 }, (_, i) => `remind me ${i + 1} min before`).join(' ')}`, ctx);
    expect(r.reminders).toHaveLength(5);
  });
});

describe('a date or recurrence phrase alone (Todoist DATE column)', () => {
  it.each([
    ['every day', { dueDate: '2026-11-18', recurrence: { type: 'INTERVAL', interval: 1 } }],
    ['every monday', { dueDate: '2026-11-23', recurrence: { type: 'WEEKDAY', weekdays: [0] } }],
    ['every! 2 weeks', { recurrence: { type: 'WEEKDAY', interval: 2, fixed: false } }],
    ['every 1st', { dueDate: '2026-12-01', recurrence: { type: 'MONTHLY' } }],
    ['Dec 12', { dueDate: '2026-12-12', recurrence: null }],
    ['tomorrow 18:30', { dueDate: '2026-11-19', dueTime: '18:30' }],
    ['every weekday at 9am', { dueTime: '09:00', recurrence: { type: 'WEEKDAY', weekdays: [0, 1, 2, 3, 4] } }],
  ] as const)('%s', (text, expected) => {
    const r = parseWhen(text, ctx);
    expect(r.ok).toBe(true);
    expect(r).toMatchObject(expected);
  });

  it('is not ok when any word is left over, naming it', () => {
    expect(parseWhen('every blue moon', ctx)).toMatchObject({ ok: false, recurrence: null });
    expect(parseWhen('Dec 12 maybe', ctx)).toMatchObject({ ok: false, dueDate: '2026-12-12', notUnderstood: ['maybe'] });
    expect(parseWhen('#home', ctx).ok).toBe(false);
  });
});

describe('describeRecurrence', () => {
  it('says the rule in words', () => {
    expect(describeRecurrence({ type: 'MONTHLY', interval: 1, weekdays: [], weekOfMonth: null, fixed: true }, '2026-12-01')).toBe('Every month on the 1st');
    expect(describeRecurrence({ type: 'WEEKDAY', interval: 2, weekdays: [0, 3], weekOfMonth: null, fixed: true })).toBe('Every other week on Monday and Thursday');
    expect(describeRecurrence({ type: 'NTH_WEEKDAY', interval: 1, weekdays: [4], weekOfMonth: -1, fixed: true })).toBe('Every last Friday of the month');
    expect(describeRecurrence({ type: 'INTERVAL', interval: 3, weekdays: [], weekOfMonth: null, fixed: false })).toBe('Every 3 days, counted from completion');
    expect(describeRecurrence({ type: 'YEARLY', interval: 1, weekdays: [], weekOfMonth: null, fixed: true }, '2026-12-12')).toBe('Every year on Dec 12');
  });
});

