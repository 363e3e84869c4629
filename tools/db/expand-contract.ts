/**
 * Migrations are expand/contract (docs/releases.md, Upgrading): while a service rolls, its previous
 * release still runs against the migrated database, so a migration may not take away or tighten
 * what that release uses — drop or rename one of its tables or columns, narrow a column's type, make a
 * column NOT NULL, or add a NOT NULL column without a default to a table it inserts into. Such a step
 * belongs to a later release, once no running release uses the old shape: the contract step of an
 * earlier expand, marked on the statement with a comment naming that expand's migration, which must
 * have shipped already:
 *
 *     -- contract: 0012_task_due_at.sql
 *     ALTER TABLE "tasks"."tasks" DROP COLUMN "due_on";
 *
 * `violations` reads a migration's SQL against the previous release's schema (its newest drizzle-kit
 * snapshot) and says what breaks it; tools/db/expand-contract.test.ts runs it on every migration that
 * is new since the previous release.
 */

export interface Column {
  type: string;
  notNull: boolean;
}
/** A release's tables (`schema.table`) and their columns, as its drizzle-kit snapshot has them. */
export type SchemaModel = Map<string, Map<string, Column>>;

interface Snapshot {
  tables: Record<string, { name: string; schema: string; columns: Record<string, { name: string; type: string; notNull?: boolean }> }>;
}

export function modelOfSnapshot(json: string): SchemaModel {
  const snap = JSON.parse(json) as Snapshot;
  const model: SchemaModel = new Map();
  for (const t of Object.values(snap.tables)) {
    model.set(`${t.schema || 'public'}.${t.name}`, new Map(Object.values(t.columns).map((c) => [c.name, { type: normaliseType(c.type), notNull: Boolean(c.notNull) }])));
  }
  return model;
}

const ALIASES: Record<string, string> = {
  int: 'integer',
  int4: 'integer',
  int8: 'bigint',
  int2: 'smallint',
  bool: 'boolean',
  float8: 'double precision',
  float4: 'real',
  timestamptz: 'timestamp with time zone',
  timetz: 'time with time zone',
  varchar: 'character varying',
  char: 'character',
  decimal: 'numeric',
};

export function normaliseType(type: string): string {
  const t = type.toLowerCase().replace(/"/g, '').replace(/\s+/g, ' ').trim();
  const m = /^([a-z0-9_ ]+?)\s*(\(.*\))?(\[\])?$/.exec(t);
  if (!m) return t;
  return `${ALIASES[m[1]!] ?? m[1]!}${m[2] ?? ''}${m[3] ?? ''}`;
}

const length = (t: string) => Number(/\((\d+)\)/.exec(t)?.[1] ?? Infinity);
const base = (t: string) => t.replace(/\(.*\)/, '');

/** Can every value of `from` be stored in `to` (so the previous release writes nothing the new type refuses)? */
export function widens(from: string, to: string): boolean {
  const [a, b] = [normaliseType(from), normaliseType(to)];
  if (a === b) return true;
  const ladder = ['smallint', 'integer', 'bigint', 'numeric'];
  if (ladder.includes(a) && ladder.includes(base(b))) return ladder.indexOf(a) <= ladder.indexOf(base(b)) && (base(b) !== 'numeric' || b === 'numeric');
  if (a === 'real' && b === 'double precision') return true;
  if (['character varying', 'character', 'text'].includes(base(a))) {
    if (b === 'text' || b === 'character varying') return true;
    if (base(b) === 'character varying') return length(b) >= length(a);
  }
  if (base(a) === 'numeric' && b === 'numeric') return true;
  return false;
}

/** The statements of a migration with the comments before each (drizzle-kit's breakpoints, or `;`; dollar-quoted bodies kept whole). */
export function statements(sql: string): { text: string; comments: string[] }[] {
  const out: { text: string; comments: string[] }[] = [];
  const chunks: string[] = [];
  let current = '';
  for (let i = 0; i < sql.length; i++) {
    if (sql.startsWith('$$', i)) {
      const end = sql.indexOf('$$', i + 2);
      const stop = end < 0 ? sql.length : end + 2;
      current += sql.slice(i, stop);
      i = stop - 1;
    } else if (sql[i] === ';') {
      chunks.push(current);
      current = '';
    } else current += sql[i];
  }
  chunks.push(current);
  for (const chunk of chunks) {
    const comments: string[] = [];
    const text = chunk
      .replace(/--> statement-breakpoint/g, '')
      .split('\n')
      .filter((line) => {
        const c = /^\s*--(.*)$/.exec(line);
        if (c) comments.push(c[1]!.trim());
        return !c;
      })
      .join(' ')
      .replace(/\s+/g, ' ')
      .trim();
    if (text) out.push({ text, comments });
  }
  return out;
}

const IDENT = String.raw`(?:"[^"]+"|[a-z_][a-z0-9_$]*)`;
const NAME = String.raw`(${IDENT}(?:\.${IDENT})?)`;
const unquote = (s: string) => (s.startsWith('"') ? s.slice(1, -1) : s.toLowerCase());
const qualified = (name: string, schema: string) => {
  const parts = name.match(new RegExp(IDENT, 'gi'))!.map(unquote);
  return parts.length === 2 ? `${parts[0]}.${parts[1]}` : `${schema}.${parts[0]}`;
};

/** Split on commas outside parentheses. */
function topLevel(list: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of list) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(cur.trim());
      cur = '';
    } else cur += ch;
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}

/**
 * What in migration `file` (of the service whose schema is `schema`) breaks the previous release,
 * one line each; `previousFiles` are the migration files that release had (a contract step names one).
 */
export function violations(sql: string, opts: { file: string; schema: string; previous: SchemaModel; previousFiles: readonly string[] }): string[] {
  const { file, schema, previous } = opts;
  const found: string[] = [];
  for (const { text, comments } of statements(sql)) {
    const marked = comments.map((c) => /^contract:\s*(\S+)/i.exec(c)?.[1]).find(Boolean);
    const problems: string[] = [];
    const hit = (what: string) => problems.push(what);
    let m: RegExpExecArray | null;
    if ((m = new RegExp(String.raw`^drop table (?:if exists )?(.+?)(?: cascade| restrict)?$`, 'i').exec(text))) {
      for (const t of topLevel(m[1]!)) if (previous.has(qualified(t, schema))) hit(`drops table ${qualified(t, schema)}`);
    } else if ((m = new RegExp(String.raw`^drop schema (?:if exists )?(${IDENT})`, 'i').exec(text))) {
      const s = unquote(m[1]!);
      if ([...previous.keys()].some((t) => t.startsWith(`${s}.`))) hit(`drops schema ${s}`);
    } else if ((m = new RegExp(String.raw`^alter table (?:if exists )?(?:only )?${NAME} (.+)$`, 'i').exec(text))) {
      const table = qualified(m[1]!, schema);
      const columns = previous.get(table);
      if (!columns) continue; // a table the previous release does not have: nothing of its to break
      for (const action of topLevel(m[2]!)) {
        let a: RegExpExecArray | null;
        if ((a = new RegExp(String.raw`^rename to (${IDENT})`, 'i').exec(action))) hit(`renames table ${table} to ${unquote(a[1]!)}`);
        else if ((a = new RegExp(String.raw`^rename (?:column )?(${IDENT}) to (${IDENT})`, 'i').exec(action)) && !/^rename constraint/i.test(action)) {
          const c = unquote(a[1]!);
          if (columns.has(c)) hit(`renames column ${table}.${c} to ${unquote(a[2]!)}`);
        } else if ((a = new RegExp(String.raw`^drop (?:column )?(?:if exists )?(${IDENT})`, 'i').exec(action)) && !/^drop (constraint|default|not null|identity|expression)\b/i.test(action)) {
          const c = unquote(a[1]!);
          if (columns.has(c)) hit(`drops column ${table}.${c}`);
        } else if ((a = new RegExp(String.raw`^alter (?:column )?(${IDENT}) (?:set data )?type (.+?)(?: using .*| collate .*)?$`, 'i').exec(action))) {
          const c = unquote(a[1]!);
          const was = columns.get(c);
          if (was && !widens(was.type, a[2]!)) hit(`changes the type of ${table}.${c} from ${was.type} to ${normaliseType(a[2]!)}, which may not hold every value the previous release writes`);
        } else if ((a = new RegExp(String.raw`^alter (?:column )?(${IDENT}) set not null`, 'i').exec(action))) {
          const c = unquote(a[1]!);
          if (columns.get(c)?.notNull === false) hit(`makes ${table}.${c} NOT NULL, which the previous release may leave empty`);
        } else if ((a = new RegExp(String.raw`^add (?:column )?(?:if not exists )?(${IDENT}) (.+)$`, 'i').exec(action)) && !/^add (constraint|primary key|unique|check|foreign key)\b/i.test(action)) {
          const rest = a[2]!;
          if (/\bnot null\b/i.test(rest) && !/\bdefault\b/i.test(rest) && !/\bgenerated\b/i.test(rest)) hit(`adds ${table}.${unquote(a[1]!)} NOT NULL without a default, so the previous release's inserts fail`);
        }
      }
    }
    if (problems.length === 0) continue;
    if (marked) {
      if (opts.previousFiles.includes(marked)) continue;
      found.push(`${file}: "${text.slice(0, 120)}" is marked as the contract step of ${marked}, which no earlier release shipped: ${problems.join('; ')}`);
      continue;
    }
    for (const p of problems) found.push(`${file}: ${p} while the previous release still uses it ("${text.slice(0, 120)}"). Expand now, contract in a later release: mark that statement with "-- contract: <the expand's migration file>"`);
  }
  return found;
}
