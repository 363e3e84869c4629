/**
 * Writes docs/kubernetes.md's sizing table from operator/src/sizing.ts (the single source): the
 * table after the `<!-- sizing table: … -->` line, up to the first blank line. tools/k8s/chart.test.ts
 * fails when the committed docs are stale: run `node tools/k8s/gen-sizing.ts` after changing the figures.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sizingTable } from '../../operator/src/sizing.ts';

export const KUBERNETES_DOC = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs', 'kubernetes.md');
const MARKER = '<!-- sizing table: ';

/** `doc` with the table after the marker replaced by the module's. */
export function withSizingTable(doc: string): string {
  const at = doc.indexOf(MARKER);
  if (at < 0) throw new Error(`docs/kubernetes.md has no "${MARKER}…" line`);
  const tableStart = doc.indexOf('\n', at) + 1;
  const end = doc.indexOf('\n\n', tableStart);
  return doc.slice(0, tableStart) + sizingTable() + (end < 0 ? '\n' : doc.slice(end));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(KUBERNETES_DOC, withSizingTable(readFileSync(KUBERNETES_DOC, 'utf8')));
  console.log(`wrote the sizing table of ${KUBERNETES_DOC}`);
}
