import { onCleanup, onMount, type JSX } from 'solid-js';
import type { Task, Topic } from '../lib/types.ts';
import { Icon } from './icons.tsx';
import { TaskEditor } from './TaskEditor.tsx';
import { cssHeight } from './ui.tsx';

/**
 * The task editor beside the list (desktop: a side panel the page makes room for) or over it (phone:
 * a bottom sheet). The task's row stays in sight and is marked, so the editor opens where the task is.
 * Focus, Escape and giving focus back come from the editor's `dismissable`; the close button is the
 * same as Cancel. Mount one per task (`<Show keyed>`), so another task gets a fresh editor.
 */
export function TaskPanel(props: { editing: Task | 'new'; topics: Topic[]; today: string; defaultTopicId?: string | null; onSaved: () => void; onClose: () => void }): JSX.Element {
  const task = () => (props.editing === 'new' ? undefined : props.editing);
  onMount(() => {
    const row = task() && document.querySelector<HTMLElement>(`[data-task-id="${task()!.id}"]`);
    if (!row) return;
    row.classList.add('editing');
    onCleanup(() => row.classList.remove('editing'));
    // On a phone the sheet covers the lower part of the screen: the row goes just below the top bar.
    const phone = matchMedia('(max-width: 760px)').matches;
    const top = row.getBoundingClientRect().top - (document.querySelector('.topbar')?.getBoundingClientRect().height ?? 0) - 8;
    if (phone) window.scrollBy({ top });
    else row.scrollIntoView({ block: 'nearest' });
  });
  return (
    <aside
      ref={(el) => cssHeight(el, '--sheet-h')}
      class="task-panel"
      role="dialog"
      aria-labelledby="task-panel-h"
      data-testid="task-panel"
      // The close button sits outside the editor's form: Escape there closes too.
      onKeyDown={(e) => {
        if (e.key !== 'Escape' || e.defaultPrevented) return;
        e.preventDefault();
        props.onClose();
      }}
    >
      <div class="row between">
        <h2 id="task-panel-h">{task() ? 'Edit task' : 'New task'}</h2>
        <button type="button" class="ghost icon-only" aria-label="Close" onClick={() => props.onClose()}>
          <Icon name="close" />
        </button>
      </div>
      <TaskEditor task={task()} topics={props.topics} today={props.today} defaultTopicId={props.defaultTopicId ?? null} onSaved={props.onSaved} onCancel={props.onClose} />
    </aside>
  );
}
