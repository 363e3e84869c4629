/**
 * Where a process's heap goes, from a V8 heap snapshot (tools/bench/footprint.ts --why, through
 * lib/import-probe.ts): the heap by V8's node type, and per package what its modules keep — each
 * script's source text and its functions (shared function info, bytecode, scope info, feedback
 * metadata, closures), attributed through the snapshot's `script` and `shared` edges. Objects a
 * package's code allocated are not attributed (that needs retainers, which a dominator tree gives);
 * they stay in the by-type totals.
 */
import { readFileSync } from 'node:fs';
import { packageOf } from '../../testenv/start-imports.ts';

export interface HeapSummary {
  totalMb: number;
  /** V8 node type → MB (self sizes) */
  byType: Record<string, number>;
  /** package (or the repo's own folder) → MB of source text and functions, and its scripts */
  byPackage: { name: string; sourceMb: number; codeMb: number; scripts: number }[];
  /** the largest groups of nodes by V8 type and name (an object's constructor, a system object's kind), self sizes */
  byName: { type: string; name: string; count: number; mb: number }[];
}

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; edge_fields: string[]; node_types: [string[]]; edge_types: [string[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** A module URL's package (`@scope/x`), the repo's folder (`services/tasks`, `proto`), node's own, or a bundle's chunk. */
export function groupOf(url: string): string {
  const pkg = packageOf(url);
  if (pkg) return pkg;
  if (!url.startsWith('file://')) return url.startsWith('node:') || !url ? 'node (built-in modules)' : 'other';
  const rel = /\/(services|proto|tools|operator)\/([^/]+)?/.exec(url);
  return rel ? (rel[1] === 'proto' ? 'proto' : `${rel[1]}/${rel[2] ?? ''}`) : 'bundle';
}

export function summarizeHeapSnapshot(file: string): HeapSummary {
  const s = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  const { node_fields, edge_fields, node_types, edge_types } = s.snapshot.meta;
  const nf = node_fields.length;
  const ef = edge_fields.length;
  const [TYPE, NAME, SIZE, EDGES] = ['type', 'name', 'self_size', 'edge_count'].map((f) => node_fields.indexOf(f)) as [number, number, number, number];
  const [ETYPE, ENAME, ETO] = ['type', 'name_or_index', 'to_node'].map((f) => edge_fields.indexOf(f)) as [number, number, number];
  const N = s.nodes;
  const E = s.edges;
  const count = N.length / nf;
  const first = new Uint32Array(count + 1);
  for (let i = 0, e = 0; i < count; i++) {
    first[i] = e;
    e += N[i * nf + EDGES]! * ef;
  }
  first[count] = E.length;
  const types = node_types[0];
  const edgeTypes = edge_types[0];
  const size = (i: number) => N[i * nf + SIZE]!;
  /** named edges of node i: name → target node index */
  const edges = (i: number, names: string[]): Map<string, number> => {
    const out = new Map<string, number>();
    for (let e = first[i]!; e < first[i + 1]!; e += ef) {
      const t = edgeTypes[E[e + ETYPE]!];
      if (t === 'element' || t === 'hidden') continue;
      const name = s.strings[E[e + ENAME]!]!;
      if (names.includes(name)) out.set(name, E[e + ETO]! / nf);
    }
    return out;
  };

  const byType: Record<string, number> = {};
  const named = new Map<string, { type: string; name: string; count: number; mb: number }>();
  let total = 0;
  for (let i = 0; i < count; i++) {
    const t = types[N[i * nf + TYPE]!]!;
    byType[t] = (byType[t] ?? 0) + size(i) / 1e6;
    total += size(i);
    // strings and code by type alone: their names are their text
    const name = t === 'string' || t === 'concatenated string' || t === 'sliced string' || t === 'number' ? '' : s.strings[N[i * nf + NAME]!]!.slice(0, 60);
    const k = `${t}\u0000${name}`;
    const g = named.get(k) ?? named.set(k, { type: t, name, count: 0, mb: 0 }).get(k)!;
    g.count++;
    g.mb += size(i) / 1e6;
  }

  const packages = new Map<string, { sourceMb: number; codeMb: number; scripts: Set<number> }>();
  const pkg = (name: string) => packages.get(name) ?? packages.set(name, { sourceMb: 0, codeMb: 0, scripts: new Set() }).get(name)!;
  /** script node → its package, and its source counted once */
  const scriptPackage = new Map<number, string>();
  const scriptOf = (script: number): string => {
    let name = scriptPackage.get(script);
    if (name !== undefined) return name;
    name = groupOf(s.strings[N[script * nf + NAME]!]!);
    scriptPackage.set(script, name);
    const p = pkg(name);
    p.scripts.add(script);
    const source = edges(script, ['source']).get('source');
    if (source !== undefined) p.sourceMb += size(source) / 1e6;
    return name;
  };
  /** shared function info → package, its own pieces counted once */
  const counted = new Set<number>();
  const sfiPackage = new Map<number, string | null>();
  const sfiOf = (sfi: number): string | null => {
    if (sfiPackage.has(sfi)) return sfiPackage.get(sfi)!;
    const parts = edges(sfi, ['script', 'name_or_scope_info', 'function_data', 'trusted_function_data', 'raw_outer_scope_info_or_feedback_metadata']);
    const script = parts.get('script');
    const name = script === undefined ? null : scriptOf(script);
    sfiPackage.set(sfi, name);
    if (name !== null) {
      let bytes = size(sfi);
      // each piece once: a function's outer scope info is shared by every function inside that scope
      for (const [k, v] of parts) if (k !== 'script' && !counted.has(v)) bytes += (counted.add(v), size(v));
      pkg(name).codeMb += bytes / 1e6;
    }
    return name;
  };
  for (let i = 0; i < count; i++) {
    if (types[N[i * nf + TYPE]!] !== 'closure') continue;
    const shared = edges(i, ['shared']).get('shared');
    const name = shared === undefined ? null : sfiOf(shared);
    if (name !== null) pkg(name).codeMb += size(i) / 1e6;
  }
  // functions never instantiated as closures still hold their pieces
  for (let i = 0; i < count; i++) if (s.strings[N[i * nf + NAME]!] === '(shared function info)') sfiOf(i);

  const byPackage = [...packages]
    .map(([name, p]) => ({ name, sourceMb: p.sourceMb, codeMb: p.codeMb, scripts: p.scripts.size }))
    .filter((p) => p.sourceMb + p.codeMb >= 0.01)
    .sort((a, b) => b.sourceMb + b.codeMb - (a.sourceMb + a.codeMb));
  const byName = [...named.values()].sort((a, b) => b.mb - a.mb).slice(0, 20);
  return { totalMb: total / 1e6, byType, byPackage, byName };
}
