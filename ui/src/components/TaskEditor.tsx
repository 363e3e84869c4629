import { createMemo, createSignal, For, Index, Show, type JSX } from 'solid-js';
import { startSchedule, upcoming, validateRule, type RecurrenceRule, type RecurrenceType } from '../../../proto/src/calendar/recurrence.ts';
import { MAX_REMINDERS, type Reminder } from '../../../proto/src/calendar/reminders.ts';
import { ApiError, request, type BodyOf } from '../lib/api.ts';
import { write } from '../lib/outbox.ts';
import { formatDate, formatDateTime } from '../lib/dates.ts';
import { errorText, toast } from '../lib/toast.ts';
import type { Priority, Task, TaskType, Topic } from '../lib/types.ts';
import { dismissable, Field, PrioritySelect } from './ui.tsx';

const WEEKDAY_NAMES = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];
const UNIT: Record<RecurrenceType, [string, string]> = {
  INTERVAL: ['day', 'days'],
  WEEKDAY: ['week', 'weeks'],
  MONTHLY: ['month', 'months'],
  YEARLY: ['year', 'years'],
  NTH_WEEKDAY: ['month', 'months'],
};

/**
 * The recurrence editor shows the next dates the rule produces, computed with the tasks service's own
 * pure schedule functions (imported, not re-implemented), so the preview and the server agree.
 */
export function RecurrenceEditor(props: { rule: RecurrenceRule; start: string; onChange: (r: RecurrenceRule) => void }): JSX.Element {
  const set = (patchRule: Partial<RecurrenceRule>) => props.onChange({ ...props.rule, ...patchRule });
  const issues = createMemo(() => validateRule(props.rule));
  const preview = createMemo(() => {
    if (issues().length > 0) return [];
    const { anchor, nextDueDate } = startSchedule(props.rule, props.start);
    return upcoming(props.rule, anchor, nextDueDate, 5);
  });
  return (
    <fieldset data-testid="recurrence-editor">
      <legend>Repeats</legend>
      <div class="form-grid">
        <Field label="Pattern">
          {(id) => (
            <select
              id={id}
              value={props.rule.type}
              onChange={(e) => {
                const type = e.currentTarget.value as RecurrenceType;
                set({ type, weekdays: type === 'WEEKDAY' || type === 'NTH_WEEKDAY' ? (props.rule.weekdays.length ? props.rule.weekdays.slice(0, type === 'NTH_WEEKDAY' ? 1 : 7) : [0]) : [], weekOfMonth: type === 'NTH_WEEKDAY' ? (props.rule.weekOfMonth ?? 1) : null });
              }}
            >
              <option value="INTERVAL">Every N days</option>
              <option value="WEEKDAY">On weekdays</option>
              <option value="MONTHLY">Monthly (same day)</option>
              <option value="NTH_WEEKDAY">Monthly (e.g. last Friday)</option>
              <option value="YEARLY">Yearly</option>
            </select>
          )}
        </Field>
        <Field label={`Every how many ${UNIT[props.rule.type][1]}`}>
          {(id) => <input id={id} type="number" min="1" max="365" value={props.rule.interval} onInput={(e) => set({ interval: Number(e.currentTarget.value) || 1 })} />}
        </Field>
        <Show when={props.rule.type === 'NTH_WEEKDAY'}>
          <Field label="Which one">
            {(id) => (
              <select id={id} value={String(props.rule.weekOfMonth ?? 1)} onChange={(e) => set({ weekOfMonth: Number(e.currentTarget.value) })}>
                <option value="1">First</option>
                <option value="2">Second</option>
                <option value="3">Third</option>
                <option value="4">Fourth</option>
                <option value="-1">Last</option>
              </select>
            )}
          </Field>
        </Show>
      </div>
      <Show when={props.rule.type === 'WEEKDAY' || props.rule.type === 'NTH_WEEKDAY'}>
        <div class="row" role="group" aria-label="Weekdays" style={{ 'margin-top': '0.75rem' }}>
          <Index each={WEEKDAY_NAMES}>
            {(name, i) => (
              <label class="check">
                <input
                  type={props.rule.type === 'NTH_WEEKDAY' ? 'radio' : 'checkbox'}
                  name="weekday"
                  checked={props.rule.weekdays.includes(i)}
                  onChange={(e) => {
                    if (props.rule.type === 'NTH_WEEKDAY') set({ weekdays: [i] });
                    else set({ weekdays: e.currentTarget.checked ? [...props.rule.weekdays, i].sort() : props.rule.weekdays.filter((d) => d !== i) });
                  }}
                />
                {name()}
              </label>
            )}
          </Index>
        </div>
      </Show>
      <label class="check" style={{ 'margin-top': '0.75rem' }}>
        <input type="checkbox" checked={props.rule.fixed} onChange={(e) => set({ fixed: e.currentTarget.checked })} />
        Fixed schedule (otherwise the next date counts from the day you complete it)
      </label>
      <Show when={issues().length > 0}>
        <p class="error small" role="alert" style={{ color: 'var(--danger)', 'margin-top': '0.5rem' }}>
          {issues()
            .map((i) => i.message)
            .join('; ')}
        </p>
      </Show>
      <Show when={preview().length > 0}>
        <p class="small" style={{ 'margin': '0.75rem 0 0' }} data-testid="recurrence-preview">
          <span class="muted">Next dates: </span>
          <For each={preview()}>{(d, i) => <span>{(i() ? ' · ' : '') + formatDate(d)}</span>}</For>
        </p>
      </Show>
    </fieldset>
  );
}

/** Offsets the reminder editor offers, in minutes before the due time. */
const BEFORE_OPTIONS: [number, string][] = [
  [0, 'At the due time'],
  [5, '5 minutes before'],
  [10, '10 minutes before'],
  [15, '15 minutes before'],
  [30, '30 minutes before'],
  [60, '1 hour before'],
  [120, '2 hours before'],
  [1440, '1 day before'],
  [2880, '2 days before'],
  [10080, '1 week before'],
];

/** How a reminder reads in the editor. */
export function reminderText(r: Reminder): string {
  if ('at' in r) return formatDateTime(r.at);
  const named = BEFORE_OPTIONS.find(([m]) => m === r.beforeDueMinutes);
  return named ? named[1] : `${r.beforeDueMinutes} minutes before`;
}

/** The reminders of a task: up to five, each before its due time or at a date and time. */
export function RemindersEditor(props: { reminders: Reminder[]; hasDueDate: boolean; hasDueTime: boolean; error?: string | undefined; onChange: (r: Reminder[]) => void }): JSX.Element {
  const [kind, setKind] = createSignal<'before' | 'at'>(props.hasDueDate ? 'before' : 'at');
  const [before, setBefore] = createSignal(30);
  const [at, setAt] = createSignal('');
  const full = () => props.reminders.length >= MAX_REMINDERS;
  const add = () => {
    const next: Reminder | null = kind() === 'before' ? { beforeDueMinutes: before() } : at() ? { at: new Date(at()).toISOString() } : null;
    if (!next || props.reminders.some((r) => JSON.stringify(r) === JSON.stringify(next))) return;
    props.onChange([...props.reminders, next]);
    setAt('');
  };
  return (
    <fieldset data-testid="reminders-editor">
      <legend>Reminders</legend>
      <Show when={props.reminders.length > 0} fallback={<p class="small muted">No reminders.</p>}>
        <ul class="plain" aria-label="Reminders">
          <Index each={props.reminders}>
            {(r, i) => (
              <li class="row">
                <span class="grow">{reminderText(r())}</span>
                <button type="button" class="small" aria-label={`Remove reminder: ${reminderText(r())}`} onClick={() => props.onChange(props.reminders.filter((_, j) => j !== i))}>
                  Remove
                </button>
              </li>
            )}
          </Index>
        </ul>
      </Show>
      <div class="row" style={{ 'margin-top': '0.5rem', 'flex-wrap': 'wrap' }}>
        <select aria-label="Reminder kind" value={kind()} onChange={(e) => setKind(e.currentTarget.value as 'before' | 'at')}>
          <option value="before" disabled={!props.hasDueDate}>
            Before it is due
          </option>
          <option value="at">At a date and time</option>
        </select>
        <Show
          when={kind() === 'before'}
          fallback={<input type="datetime-local" aria-label="Reminder date and time" value={at()} onInput={(e) => setAt(e.currentTarget.value)} />}
        >
          <select aria-label="How long before" value={String(before())} onChange={(e) => setBefore(Number(e.currentTarget.value))}>
            <For each={BEFORE_OPTIONS}>{([m, label]) => <option value={String(m)}>{label}</option>}</For>
          </select>
        </Show>
        <button type="button" onClick={add} disabled={full() || (kind() === 'before' && !props.hasDueDate) || (kind() === 'at' && !at())}>
          Add reminder
        </button>
      </div>
      <Show when={kind() === 'before' && props.hasDueDate && !props.hasDueTime}>
        <p class="small muted">Without a time of day, reminders count back from 09:00 on the due date.</p>
      </Show>
      <Show when={full()}>
        <p class="small muted">At most {MAX_REMINDERS} reminders.</p>
      </Show>
      <Show when={props.error}>
        <p class="error small" role="alert" style={{ color: 'var(--danger)' }}>
          {props.error}
        </p>
      </Show>
    </fieldset>
  );
}

function ruleOf(t: Partial<Task> | undefined): RecurrenceRule {
  return {
    type: (t?.recurrenceType as RecurrenceType | null) ?? 'INTERVAL',
    interval: t?.recurrenceInterval ?? 1,
    weekdays: t?.recurrenceWeekdays ?? [],
    weekOfMonth: t?.recurrenceWeekOfMonth ?? null,
    fixed: t?.recurrenceFixed ?? false,
  };
}

/** Fields checked together by the server: when one of them changes, all of them are sent. */
const SCHEDULE = ['type', 'dueDate', 'recurrenceType', 'recurrenceInterval', 'recurrenceWeekdays', 'recurrenceWeekOfMonth', 'recurrenceFixed'];

/** The fields of `now` that differ from `before` (the schedule's fields as one). */
function changedFields<T extends Record<string, unknown>>(before: T, now: T): Partial<T> {
  const differs = (k: string) => JSON.stringify(before[k]) !== JSON.stringify(now[k]);
  const keys = Object.keys(now).filter(differs);
  if (keys.some((k) => SCHEDULE.includes(k))) keys.push(...SCHEDULE.filter((k) => !keys.includes(k)));
  return Object.fromEntries(keys.map((k) => [k, now[k]])) as Partial<T>;
}

/** Create or edit a task. All fields of the contract that a person sets by hand. */
export function TaskEditor(props: { task?: Task; topics: Topic[]; today: string; defaultTopicId?: string | null; onSaved: () => void; onCancel: () => void }): JSX.Element {
  const t = props.task;
  const [title, setTitle] = createSignal(t?.title ?? '');
  const [notes, setNotes] = createSignal(t?.notes ?? '');
  const [type, setType] = createSignal<TaskType>((t?.type as TaskType) ?? 'ONE_TIME');
  const [priority, setPriority] = createSignal<Priority>((t?.priority as Priority) ?? 'NORMAL');
  const [topicId, setTopicId] = createSignal<string>(t?.topicId ?? props.defaultTopicId ?? '');
  const [dueDate, setDueDate] = createSignal(t?.type === 'RECURRING' ? (t?.nextDueDate ?? t?.dueDate ?? '') : (t?.dueDate ?? ''));
  const [dueTime, setDueTime] = createSignal(t?.dueTime ?? '');
  const [reminders, setReminders] = createSignal<Reminder[]>(t?.reminders ?? []);
  const [rule, setRule] = createSignal<RecurrenceRule>(ruleOf(t));
  const [minutes, setMinutes] = createSignal(t?.estimatedMinutes ? String(t.estimatedMinutes) : '');
  const [coins, setCoins] = createSignal(String(t?.coinValue ?? 1));
  const [error, setError] = createSignal<ApiError | Error | null>(null);
  const [busy, setBusy] = createSignal(false);
  /** The task as the form has it, in the contract's fields. */
  const fields = () => {
    const recurring = type() === 'RECURRING';
    const r = rule();
    return {
      title: title().trim(),
      notes: notes().trim() || null,
      type: type(),
      priority: priority(),
      topicId: topicId() || null,
      dueDate: dueDate() || null,
      dueTime: dueDate() && dueTime() ? dueTime() : null,
      reminders: reminders(),
      recurrenceType: recurring ? r.type : null,
      recurrenceInterval: recurring ? r.interval : null,
      recurrenceWeekdays: recurring && (r.type === 'WEEKDAY' || r.type === 'NTH_WEEKDAY') ? r.weekdays : null,
      recurrenceWeekOfMonth: recurring && r.type === 'NTH_WEEKDAY' ? (r.weekOfMonth as 1 | 2 | 3 | 4 | -1) : null,
      recurrenceFixed: recurring ? r.fixed : false,
      estimatedMinutes: minutes() ? Number(minutes()) : null,
      coinValue: Number(coins()) || 1,
    } satisfies BodyOf<'POST', '/api/tasks'>;
  };
  // An edit sends only what was changed here, so a change made meanwhile from the row's menu (a new
  // due date, priority or topic) is not put back by saving the panel.
  const original = t && fields();
  async function save(e: SubmitEvent) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const all = fields();
    const body = original ? changedFields(original, all) : all;
    try {
      // Offline the change is queued (lib/outbox.ts); an edit keeps the values it changed from for the conflict rule.
      const base = original && Object.fromEntries(Object.keys(body).map((k) => [k, original[k as keyof typeof original]]));
      const sent = t ? await write(request('PATCH', '/api/tasks/:id', { params: { id: t.id }, body }), { label: `Edit "${t.title}"`, ...(base ? { base } : {}) }) : await write(request('POST', '/api/tasks', { body: all }), { label: `Create "${all.title}"` });
      if (sent.queued) toast(`Saved on this device: "${body.title ?? t?.title}" is sent when you are online`);
      props.onSaved();
    } catch (err) {
      setError(err as Error);
    } finally {
      setBusy(false);
    }
  }

  const fieldError = (f: string) => (error() instanceof ApiError ? (error() as ApiError).fieldError(f) : undefined);
  // one reminder's problem is reported at body.reminders.<n>…: shown with the list
  const remindersError = () => (error() instanceof ApiError ? (error() as ApiError).issues.find((i) => i.path.startsWith('body.reminders'))?.message : undefined);

  return (
    <form class="stack" ref={(el) => dismissable(el, props.onCancel)} onSubmit={(e) => void save(e)} aria-label={t ? 'Edit task' : 'New task'} data-testid="task-editor">
      <Field label="Title" error={fieldError('title')}>
        {(id, d) => <input id={id} aria-describedby={d} value={title()} onInput={(e) => setTitle(e.currentTarget.value)} maxlength="255" required />}
      </Field>
      <div class="form-grid">
        <Field label="Type">
          {(id) => (
            <select id={id} value={type()} onChange={(e) => setType(e.currentTarget.value as TaskType)}>
              <option value="ONE_TIME">One-time</option>
              <option value="RECURRING">Recurring</option>
              <option value="DAILY_ELIGIBLE">Daily quest candidate</option>
            </select>
          )}
        </Field>
        <Field label="Priority">
          {(id) => (
            <PrioritySelect id={id} value={priority()} onChange={setPriority} />
          )}
        </Field>
        <Field label="Topic">
          {(id) => (
            <select id={id} value={topicId()} onChange={(e) => setTopicId(e.currentTarget.value)}>
              <option value="">No topic</option>
              <For each={props.topics.filter((x) => !x.archived || x.id === topicId())}>{(x) => <option value={x.id}>{x.title}</option>}</For>
            </select>
          )}
        </Field>
        <Field label={type() === 'RECURRING' ? 'Starts on' : 'Due date'} error={fieldError('dueDate')}>
          {(id, d) => <input id={id} aria-describedby={d} type="date" value={dueDate()} onInput={(e) => setDueDate(e.currentTarget.value)} />}
        </Field>
        <Field label="Time" hint="optional; in your timezone" error={fieldError('dueTime')}>
          {(id, d) => <input id={id} aria-describedby={d} type="time" value={dueTime()} disabled={!dueDate()} onInput={(e) => setDueTime(e.currentTarget.value)} />}
        </Field>
        <Field label="Estimate (minutes)" error={fieldError('estimatedMinutes')}>
          {(id, d) => <input id={id} aria-describedby={d} type="number" min="1" max="1440" value={minutes()} onInput={(e) => setMinutes(e.currentTarget.value)} />}
        </Field>
        <Field label="Coins" hint="1–10, earned on completion" error={fieldError('coinValue')}>
          {(id, d) => <input id={id} aria-describedby={d} type="number" min="1" max="10" value={coins()} onInput={(e) => setCoins(e.currentTarget.value)} />}
        </Field>
      </div>
      <Show when={type() === 'RECURRING'}>
        <RecurrenceEditor rule={rule()} start={dueDate() || props.today} onChange={setRule} />
      </Show>
      <RemindersEditor reminders={reminders()} hasDueDate={Boolean(dueDate())} hasDueTime={Boolean(dueTime())} error={remindersError()} onChange={setReminders} />
      <Field label="Notes" error={fieldError('notes')}>
        {(id, d) => <textarea id={id} aria-describedby={d} maxlength="5000" value={notes()} onInput={(e) => setNotes(e.currentTarget.value)} />}
      </Field>
      <Show when={error() && !(error() instanceof ApiError && (error() as ApiError).issues.length > 0)}>
        <div class="banner error" role="alert">
          {errorText(error())}
        </div>
      </Show>
      <div class="row">
        <button class="primary" type="submit" disabled={busy()}>
          {t ? 'Save' : 'Create task'}
        </button>
        <button type="button" onClick={() => props.onCancel()}>
          Cancel
        </button>
      </div>
    </form>
  );
}
