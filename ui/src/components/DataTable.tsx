import { For, Show, type JSX } from 'solid-js';

export interface Column<T> {
  /** column heading; on phones also the label in front of each value */
  header: string;
  /** the heading is for screen readers only (an actions column) */
  hideHeader?: boolean;
  cell: (row: T) => JSX.Element;
  /** this column names the row (a `th scope="row"`) */
  rowHeader?: boolean;
  class?: string;
}

/**
 * The one table of the app (admin figures, delivery logs). With headings it becomes a stack of
 * cards on phones, each value labelled with its column, instead of a table wider than the screen;
 * without (`headless`, two or three short columns of name and figure) it stays a table that fits.
 */
export function DataTable<T>(props: { rows: T[]; columns: Column<T>[]; caption: string; headless?: boolean; testId?: string; rowTestId?: string }): JSX.Element {
  return (
    <table class="data-table" classList={{ stacked: !props.headless }} data-testid={props.testId}>
      <caption class="sr-only">{props.caption}</caption>
      <Show when={!props.headless}>
        <thead>
          <tr>
            <For each={props.columns}>{(c) => <th scope="col">{c.hideHeader ? <span class="sr-only">{c.header}</span> : c.header}</th>}</For>
          </tr>
        </thead>
      </Show>
      <tbody>
        <For each={props.rows}>
          {(row) => (
            <tr data-testid={props.rowTestId}>
              <For each={props.columns}>
                {(c) =>
                  c.rowHeader ? (
                    <th scope="row" class={c.class}>
                      {c.cell(row)}
                    </th>
                  ) : (
                    <td class={c.class} data-label={c.hideHeader ? undefined : c.header}>
                      {c.cell(row)}
                    </td>
                  )
                }
              </For>
            </tr>
          )}
        </For>
      </tbody>
    </table>
  );
}
