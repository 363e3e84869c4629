// Persistent files: rules.json and the version cache in data_dir, audit.log in log_dir.
import { accessSync, appendFileSync, closeSync, constants, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { initialRules, ruleSetSchema } from './rules.ts';

export const VERSION = '0.1.0';

export const ACCEPTANCE_STATES = ['idle', 'pending', 'accepted', 'rolled_back'] as const;
export type AcceptanceState = (typeof ACCEPTANCE_STATES)[number];

const stateSchema = z.object({
  current: ruleSetSchema,
  staged: ruleSetSchema,
  backup: ruleSetSchema.nullable().default(null),
  /** Set while an apply awaits confirmation; survives a crash so the next start can roll back. */
  pending: z.object({ applied_at: z.string(), deadline: z.string() }).nullable().default(null),
  acceptance: z.enum(ACCEPTANCE_STATES).default('idle'),
  last_apply: z.string().nullable().default(null),
  /** Config file text to write back when a pending options change is rolled back. */
  backup_config: z.string().nullable().default(null),
  /** Config file text the confirmed rules were built from: a rollback restores it whatever changed the file. */
  confirmed_config: z.string().nullable().default(null),
});
export type RulesState = z.output<typeof stateSchema>;

export function initialState(): RulesState {
  return { current: initialRules(), staged: initialRules(), backup: null, pending: null, acceptance: 'idle', last_apply: null, backup_config: null, confirmed_config: null };
}

/** Write via a temp file, fsync and rename, so a crash leaves either the old or the new file. */
export function writeFileAtomic(file: string, text: string, mode = 0o600): void {
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'w', mode);
  try {
    writeFileSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
}

/** Create the directory if needed and prove it is writable by writing a probe file. */
export function ensureWritableDir(dir: string, label: string): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o750 });
    accessSync(dir, constants.W_OK);
    const probe = join(dir, `.write-probe-${process.pid}`);
    writeFileSync(probe, '');
    unlinkSync(probe);
  } catch (e) {
    throw new Error(`${label} ${dir} is not writable: ${(e as Error).message}`, { cause: e });
  }
}

export class RulesStore {
  readonly file: string;
  /** Copy of the last rules.json that was written successfully (read when rules.json is corrupt). */
  readonly lastGood: string;
  /** The last confirmed ruleset as the exact nft script; rollback re-applies it byte for byte. */
  readonly confirmedFile: string;
  constructor(dataDir: string) {
    this.file = join(dataDir, 'rules.json');
    this.lastGood = `${this.file}.last-good`;
    this.confirmedFile = join(dataDir, 'confirmed.nft');
  }

  /**
   * The stored state, or undefined on a fresh install. A corrupt rules.json is moved aside and the
   * last good copy used; without one the error names both files (the daemon refuses to start).
   */
  load(onRecovered?: (message: string) => void): RulesState | undefined {
    if (!existsSync(this.file)) return undefined;
    const problem = parseProblem(this.file);
    if (typeof problem !== 'string') return problem;
    const corrupt = `${this.file}.corrupt`;
    if (existsSync(this.lastGood)) {
      const good = parseProblem(this.lastGood);
      if (typeof good !== 'string') {
        renameSync(this.file, corrupt);
        writeFileAtomic(this.file, readFileSync(this.lastGood, 'utf8'));
        onRecovered?.(`${this.file} is corrupt (${problem}); moved to ${corrupt}, using the last good copy ${this.lastGood}`);
        return good;
      }
    }
    throw new Error(`${this.file} is corrupt (${problem}) and there is no usable last good copy (${this.lastGood}); fix or remove the file`);
  }

  save(state: RulesState): void {
    const text = `${JSON.stringify(state, null, 2)}\n`;
    writeFileAtomic(this.file, text);
    writeFileAtomic(this.lastGood, text);
  }

  confirmedScript(): string | null {
    return existsSync(this.confirmedFile) ? readFileSync(this.confirmedFile, 'utf8') : null;
  }

  saveConfirmedScript(script: string | null): void {
    if (script === null) rmSync(this.confirmedFile, { force: true });
    else writeFileAtomic(this.confirmedFile, script);
  }
}

/** The parsed state, or why the file cannot be used. */
function parseProblem(file: string): RulesState | string {
  try {
    const r = stateSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    return r.success ? r.data : r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
  } catch (e) {
    return (e as Error).message;
  }
}

/** Version cache (easywall shape); no update server exists for this project, so `latest` stays null. */
export function writeVersionCache(dataDir: string, now = new Date()): void {
  const cache = { current: VERSION, latest: null, update_available: false, release_url: null, checked_at: now.toISOString() };
  writeFileAtomic(join(dataDir, 'version.json'), `${JSON.stringify(cache, null, 2)}\n`, 0o644);
}

export interface AuditEntry {
  time: string;
  action: string;
  rule_type?: string;
  detail: string;
  actor: string;
}

export class AuditLog {
  readonly file: string;
  constructor(logDir: string) {
    this.file = join(logDir, 'audit.log');
  }

  /** Append-only JSON lines; never rotated or truncated by the daemon. */
  write(action: string, detail: string, actor: string, ruleType?: string): AuditEntry {
    const entry: AuditEntry = { time: new Date().toISOString(), action, ...(ruleType ? { rule_type: ruleType } : {}), detail, actor };
    appendFileSync(this.file, `${JSON.stringify(entry)}\n`, { mode: 0o640 });
    return entry;
  }

  /** The last `limit` entries, oldest first. */
  tail(limit = 200): AuditEntry[] {
    if (!existsSync(this.file)) return [];
    const lines = readFileSync(this.file, 'utf8').split('\n').filter(Boolean);
    const out: AuditEntry[] = [];
    for (const line of lines.slice(-limit)) {
      try {
        out.push(JSON.parse(line) as AuditEntry);
      } catch {
        // A torn last line after a crash is skipped rather than failing the whole read.
      }
    }
    return out;
  }
}
