// The core daemon's state machine: staged rules, atomic apply, two-step activation, rollback.
import { existsSync, readFileSync, statSync } from 'node:fs';
import type { Logger } from 'pino';
import { loadConfigFile, parseConfig, type FirewallConfig } from './config.ts';
import { detectBridges } from './bridges.ts';
import { nftRun } from './nft.ts';
import { buildRuleset, type Bridge } from './ruleset.ts';
import { RULE_TYPES, ruleListSchemas, ruleSetSchema, type RuleSet, type RuleType } from './rules.ts';
import { AuditLog, ensureWritableDir, RulesStore, writeFileAtomic, writeVersionCache, type RulesState } from './store.ts';

export const ERR_APPLY_IN_PROGRESS = 'an apply is already in progress';
export const ERR_NOTHING_PENDING = 'no applied rules are awaiting confirmation';

export class UserError extends Error {}

export interface CoreDeps {
  config: FirewallConfig;
  /** Path of the config file, re-read on reload. */
  configFile?: string;
  logger: Logger;
  /** Injected for tests of the pure parts; defaults to libnftables and /sys/class/net. */
  apply?: (script: string) => void;
  bridges?: () => Bridge[];
}

export interface Status {
  active: boolean;
  acceptance: RulesState['acceptance'];
  has_pending: boolean;
  last_apply: string | null;
  /** Present while awaiting confirmation. */
  pending: { applied_at: string; deadline: string; remaining_seconds: number } | null;
  acceptance_enabled: boolean;
  acceptance_duration: number;
  /** True when staged rules differ from the applied ones. */
  staged_changes: boolean;
}

export class FirewallCore {
  config: FirewallConfig;
  readonly log: Logger;
  readonly store: RulesStore;
  readonly audit: AuditLog;
  private state: RulesState;
  private timer: NodeJS.Timeout | undefined;
  private active = false;
  private readonly applyScript: (script: string) => void;
  private readonly bridges: () => Bridge[];
  private readonly configFile: string | undefined;

  constructor(deps: CoreDeps) {
    this.config = deps.config;
    this.configFile = deps.configFile;
    this.log = deps.logger;
    this.applyScript = deps.apply ?? ((s) => void nftRun(s));
    this.bridges = deps.bridges ?? (() => detectBridges());
    ensureWritableDir(this.config.data_dir, 'data_dir');
    ensureWritableDir(this.config.log_dir, 'log_dir');
    this.store = new RulesStore(this.config.data_dir);
    this.audit = new AuditLog(this.config.log_dir);
    this.state = this.store.load();
  }

  /** Boot: an apply left unconfirmed by a dead daemon is rolled back; otherwise enforce current rules. */
  start(): void {
    writeVersionCache(this.config.data_dir);
    if (!existsSync(this.store.file)) this.persist();
    if (this.state.pending && this.state.backup) {
      this.log.warn('unconfirmed apply found at start: restoring the previous rules');
      this.rollback('daemon restarted during the confirmation window', 'system');
      return;
    }
    try {
      this.enforce(this.state.current);
      this.audit.write('boot_enforced', 'current rules applied at start', 'system');
    } catch (e) {
      this.audit.write('boot_failed', (e as Error).message, 'system');
      this.log.error({ err: e }, 'could not apply the current rules at start');
    }
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  script(rules: RuleSet): string {
    return buildRuleset({ config: this.config, rules, bridges: this.bridges() });
  }

  private enforce(rules: RuleSet): void {
    this.applyScript(this.script(rules));
    this.active = true;
  }

  private persist(): void {
    this.store.save(this.state);
  }

  status(): Status {
    const p = this.state.pending;
    return {
      active: this.active,
      acceptance: this.state.acceptance,
      has_pending: !!p,
      last_apply: this.state.last_apply,
      pending: p ? { ...p, remaining_seconds: Math.max(0, Math.ceil((Date.parse(p.deadline) - Date.now()) / 1000)) } : null,
      acceptance_enabled: this.config.acceptance.enabled,
      acceptance_duration: this.config.acceptance.duration,
      staged_changes: JSON.stringify(this.state.staged) !== JSON.stringify(this.state.current),
    };
  }

  rules(): { current: RuleSet; staged: RuleSet } {
    return { current: this.state.current, staged: this.state.staged };
  }

  saveRules(ruleType: unknown, rules: unknown, actor: string): RuleSet {
    if (typeof ruleType !== 'string' || !(RULE_TYPES as readonly string[]).includes(ruleType)) {
      throw new UserError(`rule_type must be one of ${RULE_TYPES.join(', ')}`);
    }
    const type = ruleType as RuleType;
    const parsed = ruleListSchemas[type].safeParse(rules);
    if (!parsed.success) throw new UserError(`invalid ${type} rules: ${issuesText(parsed.error.issues)}`);
    this.state.staged = { ...this.state.staged, [type]: parsed.data };
    this.persist();
    const size = (parsed.data as unknown[]).length;
    this.audit.write('rules_saved', `${size} ${type} rule(s) staged`, actor, type);
    return this.state.staged;
  }

  importRules(rules: unknown, actor: string): RuleSet {
    const parsed = ruleSetSchema.safeParse(rules);
    if (!parsed.success) throw new UserError(`invalid rules: ${issuesText(parsed.error.issues)}`);
    this.state.staged = parsed.data;
    this.persist();
    this.audit.write('rules_imported', 'staged rules replaced by import', actor);
    return this.state.staged;
  }

  /**
   * Apply the staged rules as one kernel transaction. With acceptance enabled the previous rules are
   * kept as backup and restored unless `accept` arrives within `acceptance.duration` seconds.
   */
  apply(actor: string): Status {
    if (this.state.pending) throw new UserError(ERR_APPLY_IN_PROGRESS);
    const previous = this.state.current;
    const next = this.state.staged;
    this.audit.write('apply_started', 'applying staged rules', actor);
    try {
      this.enforce(next);
    } catch (e) {
      // The batch was refused as a whole: the kernel still holds the previous ruleset untouched.
      this.audit.write('apply_failed', (e as Error).message, actor);
      throw new UserError((e as Error).message);
    }
    const now = new Date();
    this.state.current = next;
    this.state.last_apply = now.toISOString();
    if (this.config.acceptance.enabled) {
      const deadline = new Date(now.getTime() + this.config.acceptance.duration * 1000);
      this.state.backup = previous;
      this.state.pending = { applied_at: now.toISOString(), deadline: deadline.toISOString() };
      this.state.acceptance = 'pending';
      this.persist();
      this.armTimer();
    } else {
      this.state.backup = null;
      this.state.pending = null;
      this.state.acceptance = 'accepted';
      this.persist();
      this.audit.write('apply_accepted', 'acceptance disabled: committed at once', actor);
    }
    return this.status();
  }

  private armTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    const p = this.state.pending;
    if (!p) return;
    const ms = Math.max(0, Date.parse(p.deadline) - Date.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.rollback('timeout', 'system');
    }, ms);
  }

  accept(actor: string): Status {
    if (!this.state.pending) throw new UserError(ERR_NOTHING_PENDING);
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.state.pending = null;
    this.state.backup = null;
    this.state.acceptance = 'accepted';
    this.persist();
    this.audit.write('apply_accepted', 'confirmed', actor);
    return this.status();
  }

  /** Restore the backup (the rules before the unconfirmed apply) into current, staged and the kernel. */
  rollback(reason: string, actor: string): void {
    const backup = this.state.backup;
    if (!backup) return;
    this.state.current = backup;
    this.state.staged = backup;
    this.state.backup = null;
    this.state.pending = null;
    this.state.acceptance = 'rolled_back';
    this.persist();
    try {
      this.enforce(backup);
      this.audit.write('apply_rolledback', reason, actor);
      this.log.warn({ reason }, 'rules rolled back');
    } catch (e) {
      this.audit.write('rollback_failed', (e as Error).message, actor);
      this.log.error({ err: e }, 'rollback failed');
    }
  }

  /** Graceful stop during the window counts as "no confirmation": restore now rather than at next start. */
  shutdown(): void {
    this.stop();
    if (this.state.pending) this.rollback('daemon stopped during the confirmation window', 'system');
  }

  /**
   * Change option sections (acceptance, ipv6, container, firewall) in the config file: each given
   * section is merged key by key, the whole file is validated, written atomically, then reloaded.
   * The paths (socket, data, log) are not changeable over the socket.
   */
  saveOptions(patch: unknown, actor: string): FirewallConfig {
    if (!this.configFile) throw new UserError('no config file to write');
    const sections = ['acceptance', 'ipv6', 'container', 'firewall'];
    if (!patch || typeof patch !== 'object' || Array.isArray(patch)) throw new UserError('options must be an object of sections');
    const extra = Object.keys(patch).filter((k) => !sections.includes(k));
    if (extra.length) throw new UserError(`only ${sections.join(', ')} can be changed here (got ${extra.join(', ')})`);
    const raw = JSON.parse(readFileSync(this.configFile, 'utf8')) as Record<string, unknown>;
    for (const [k, v] of Object.entries(patch as Record<string, unknown>)) {
      const cur = raw[k];
      raw[k] = v && typeof v === 'object' && !Array.isArray(v) && cur && typeof cur === 'object' ? { ...cur, ...v } : v;
    }
    const parsed = parseConfig(raw);
    if (!parsed.ok) throw new UserError(`invalid options: ${parsed.problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`);
    writeFileAtomic(this.configFile, `${JSON.stringify(raw, null, 2)}\n`, statSync(this.configFile).mode & 0o777);
    this.audit.write('options_saved', `changed ${Object.keys(patch).join(', ')}`, actor);
    const r = this.reload(actor);
    if (!r.ok) throw new UserError(r.error ?? 'reload failed');
    return this.config;
  }

  /** Re-read the config file; an invalid file is refused and the running rules stay as they are. */
  reload(actor = 'system'): { ok: boolean; error?: string } {
    if (!this.configFile) return { ok: false, error: 'no config file to reload' };
    let next: FirewallConfig;
    try {
      next = loadConfigFile(this.configFile);
    } catch (e) {
      this.audit.write('config_rejected', (e as Error).message, actor);
      this.log.error({ err: e }, 'reload refused: invalid configuration; keeping the running rules');
      return { ok: false, error: (e as Error).message };
    }
    const old = this.config;
    this.config = { ...next, socket_path: old.socket_path, data_dir: old.data_dir, log_dir: old.log_dir };
    try {
      this.enforce(this.state.current);
    } catch (e) {
      this.config = old;
      this.audit.write('config_rejected', (e as Error).message, actor);
      return { ok: false, error: (e as Error).message };
    }
    if (this.state.pending) this.armTimer();
    this.audit.write('options_reloaded', 'configuration reloaded and rules re-applied', actor);
    return { ok: true };
  }
}

function issuesText(issues: readonly { path: PropertyKey[]; message: string }[]): string {
  return issues
    .slice(0, 10)
    .map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.message}`)
    .join('; ');
}
