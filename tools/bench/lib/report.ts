import { table } from './stats.ts';

/** Marks the machine-readable copy of a bench's table in its output (run.ts collects it into .bench/results.json). */
export const ROWS_MARKER = '@@bench-rows ';

export interface BenchTable {
  title: string;
  header: string[];
  rows: (string | number)[][];
}

/** Print a table for people and, on one marked line, the same rows for the docs generator. */
export function emitRows(title: string, header: string[], rows: (string | number)[][]): void {
  console.log(`${title}\n\n${table(header, rows)}\n`);
  console.log(ROWS_MARKER + JSON.stringify({ title, header, rows } satisfies BenchTable));
}
