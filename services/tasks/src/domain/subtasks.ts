import { completionCoins } from './task-schedule.ts';

/**
 * The subtask rules that need no database (docs/tasks.md): what a completion pays, and what
 * completing a subtask means for its parent.
 */

/** How many of a task's subtasks are still open. */
export const openSubtasks = (t: { subtaskCount: number; subtasksDone: number }) => t.subtaskCount - t.subtasksDone;

/**
 * Coins a completion grants. A subtask earns none: its parent pays its own coin value once, when it
 * is completed (doubled after 3 postponements, like any task). So splitting a task into ten pays what
 * the task paid before, and a step list cannot be farmed; a subtask moved out is a task again and
 * pays its own value.
 */
export function coinsFor(t: { parentId: string | null; coinValue: number; postponeCount: number }): number {
  return t.parentId ? 0 : completionCoins(t.coinValue, t.postponeCount);
}

/**
 * After a subtask was completed: its parent is completed along with it when every subtask is done
 * and the user chose so (`autoComplete`), else the client is offered to complete it; nothing while
 * subtasks are open or the parent is done already.
 */
export function parentAfterSubtask(parent: { subtaskCount: number; subtasksDone: number; completedAt: Date | null }, autoComplete: boolean): 'complete' | 'offer' | 'none' {
  if (parent.completedAt || parent.subtaskCount === 0 || openSubtasks(parent) > 0) return 'none';
  return autoComplete ? 'complete' : 'offer';
}

/**
 * The title of the topic a task is promoted to: the task's, shortened to `max` characters (a topic's
 * title is shorter than a task's) at a word where one ends in the last fifth, with an ellipsis.
 */
export function topicTitleOf(title: string, max: number): string {
  const chars = Array.from(title.trim());
  if (chars.length <= max) return chars.join('');
  const cut = chars.slice(0, max - 1).join('');
  const space = cut.lastIndexOf(' ');
  return `${(space >= (max * 4) / 5 ? cut.slice(0, space) : cut).trimEnd()}…`;
}
