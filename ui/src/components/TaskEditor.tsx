import { createMemo, createSignal, For, Index, Show, type JSX } from 'solid-js';
import { startSchedule, upcoming, validateRule, type RecurrenceRule, type RecurrenceType } from '../../../proto/src/calendar/recurrence.ts';
import { ApiError, patch, post } from '../lib/api.ts';
import { formatDate } from '../lib/dates.ts';
import { errorText } from '../lib/toast.ts';
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
export function TaskEditor(props: { task?: Task; topics: Topic[]; today: string; defaultTopicId?: string | null; onSaved: (t: Task) => void; onCancel: () => void }): JSX.Element {
  const t = props.task;
  const [title, setTitle] = createSignal(t?.title ?? '');
  const [notes, setNotes] = createSignal(t?.notes ?? '');
  const [type, setType] = createSignal<TaskType>((t?.type as TaskType) ?? 'ONE_TIME');
  const [priority, setPriority] = createSignal<Priority>((t?.priority as Priority) ?? 'NORMAL');
  const [topicId, setTopicId] = createSignal<string>(t?.topicId ?? props.defaultTopicId ?? '');
  const [dueDate, setDueDate] = createSignal(t?.type === 'RECURRING' ? (t?.nextDueDate ?? t?.dueDate ?? '') : (t?.dueDate ?? ''));
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
      recurrenceType: recurring ? r.type : null,
      recurrenceInterval: recurring ? r.interval : null,
      recurrenceWeekdays: recurring && (r.type === 'WEEKDAY' || r.type === 'NTH_WEEKDAY') ? r.weekdays : null,
      recurrenceWeekOfMonth: recurring && r.type === 'NTH_WEEKDAY' ? (r.weekOfMonth as 1 | 2 | 3 | 4 | -1) : null,
      recurrenceFixed: recurring ? r.fixed : false,
      estimatedMinutes: minutes() ? Number(minutes()) : null,
      coinValue: Number(coins()) || 1,
    };
  };
  // An edit sends only what was changed here, so a change made meanwhile from the row's menu (a new
  // due date, priority or topic) is not put back by saving the panel.
  const original = t && fields();
  async function save(e: SubmitEvent) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const body = original ? changedFields(original, fields()) : fields();
    try {
      const res = t ? await patch<{ task: Task }>(`/api/tasks/${t.id}`, body) : await post<{ task: Task }>('/api/tasks', body);
      props.onSaved(res.task);
    } catch (err) {
      setError(err as Error);
    } finally {
      setBusy(false);
    }
  }

  const fieldError = (f: string) => (error() instanceof ApiError ? (error() as ApiError).fieldError(f) : undefined);

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
