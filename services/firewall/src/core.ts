// The core daemon's state machine. Every change of the kernel ruleset — rule apply, config reload
// (SIGHUP, RELOAD_OPTIONS), SAVE_OPTIONS, the first start — goes through one path, `activate`:
// atomic apply, then pending until confirmed (ACCEPT, or FIREWALL_SELF_CONFIRM probes), else the
// last confirmed script is re-applied byte for byte. Only environment changes (container bridges,
// external interfaces) under an already confirmed configuration are applied without a window.
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import type { Logger } from 'pino';
import { parseConfigText, type FirewallConfig } from './config.ts';
import { detectBridges } from './bridges.ts';
import { externalInterfaces, type Endpoint } from './env.ts';
import { defaultRouteInterfaces } from './host.ts';
import { applyRuleset, kernelFingerprint } from './kernel.ts';
import { nftRun } from './nft.ts';
import { UserError } from './errors.ts';
import { buildRuleset, removeTableScript, TABLE, type Bridge } from './ruleset.ts';
import { emptyRules, initialRules, RULE_TYPES, ruleListSchemas, ruleSetSchema, type RuleSet, type RuleType } from './rules.ts';
import { AuditLog, ensureWritableDir, initialState, RulesStore, writeFileAtomic, writeVersionCache, type RulesState } from './store.ts';

export const ERR_APPLY_IN_PROGRESS = 'an apply is already in progress';
export const ERR_NOTHING_PENDING = 'no applied rules are awaiting confirmation';
/** How often bridges and external interfaces are re-read (the unit starts before the network). */
export const ENVIRONMENT_POLL_MS = 2000;


export interface CoreDeps {
  config: FirewallConfig;
  /** Path of the config file, re-read on reload and written by SAVE_OPTIONS. */
  configFile?: string;
  logger: Logger;
  /** Injected for tests of the pure parts; default libnftables. */
  apply?: (script: string) => void;
  /** nft check mode: throws when the kernel would refuse the script. */
  check?: (script: string) => void;
  bridges?: () => Bridge[];
  /** Interfaces the bogon filter applies to; default FIREWALL_EXTERNAL_INTERFACES or the default-route ones. */
  external?: () => string[];
  /** Ports a fresh install opens besides 22 (the SSH daemon's, the web component's). */
  firstStart?: () => { sshPorts: number[]; webPort?: number };
  /** FIREWALL_SELF_CONFIRM endpoints. */
  selfConfirm?: Endpoint[];
  probe?: (e: Endpoint) => Promise<boolean>;
  /** Our table as the kernel lists it (terse), null when absent; default libnftables (unknown with an injected `apply`). */
  inspect?: () => string | null;
  /** Called after every change of the status (the daemon forwards it to systemd as STATUS=). */
  onChange?: (status: Status) => void;
}

/** What the kernel holds, read at the time of the request. */
export interface KernelState {
  /** Our table exists. */
  table: boolean;
  /** The kernel holds exactly what the daemon last applied (chains, rules, set definitions; set contents are not compared). */
  matches: boolean;
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
  /** `enforcing` (confirmed rules loaded), `pending` (awaiting confirmation), `off` (no table of ours: the host is not protected). */
  protection: 'enforcing' | 'pending' | 'off';
  /** Why the host is not protected as configured, and what to do; null when all is well. Shown as a banner by the CLI and the web UI. */
  warning: string | null;
  /** The kernel's side, read now (null when it cannot be read). */
  kernel: KernelState | null;
  /**
   * Whether the kernel enforces confirmed rules built from the options the config file holds now, and
   * if not why: what a supervisor asks (the Kubernetes readiness probe, ready.ts). `reason` is one word.
   */
  in_force: InForce;
}

export type InForceReason = 'Enforcing' | 'Pending' | 'NotProtected' | 'KernelDiffers' | 'KernelUnreadable' | 'RolledBack' | 'ConfigNotLoaded' | 'ConfigInvalid';
export interface InForce {
  ok: boolean;
  reason: InForceReason;
  message: string;
}

/** TCP connect within 2 s. */
export function tcpProbe(e: Endpoint): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: e.host, port: e.port, timeout: 2000 });
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.once('connect', () => done(true));
    s.once('timeout', () => done(false));
    s.once('error', () => done(false));
  });
}

const HEADER = '# task-firewall confirmed inputs ';

export class FirewallCore {
  config: FirewallConfig;
  readonly log: Logger;
  readonly store: RulesStore;
  readonly audit: AuditLog;
  private state: RulesState;
  private readonly fresh: boolean;
  private timer: NodeJS.Timeout | undefined;
  private watcher: NodeJS.Timeout | undefined;
  private active = false;
  /** The script the kernel holds from us (null: our table is absent). */
  private applied: string | null = null;
  /** Bridges + external interfaces of the last build. */
  private environment = '';
  /** Bumped on every activation so a stale self-confirm loop stops. */
  private generation = 0;
  /** Text of the config file the running configuration came from. */
  private configText: string | null = null;
  /** The kernel's listing of our table right after our last change (null: no table), for `status().kernel`. */
  private kernelPrint: string | null | undefined = undefined;
  /** Why our table is absent (first start unconfirmed, switched off), for the warning. */
  private offReason: string | null = null;
  /** Why the last rollback happened, while the options it undid are still in the config file (a read-only file cannot be restored). */
  private rolledBackBecause: string | null = null;
  private readonly deps: CoreDeps;

  constructor(deps: CoreDeps) {
    this.deps = deps;
    this.config = deps.config;
    this.log = deps.logger;
    ensureWritableDir(this.config.data_dir, 'data_dir');
    ensureWritableDir(this.config.log_dir, 'log_dir');
    this.store = new RulesStore(this.config.data_dir);
    this.audit = new AuditLog(this.config.log_dir);
    const loaded = this.store.load((message) => {
      this.log.error(message);
      this.audit.write('rules_recovered', message, 'system');
    });
    this.fresh = !loaded;
    this.state = loaded ?? initialState();
    if (deps.configFile) this.configText = readFileSync(deps.configFile, 'utf8');
  }

  /** Load a full script (in place when our table exists, see kernel.ts); removing the table goes straight to nft. */
  private applyScript(script: string): void {
    if (this.deps.apply) this.deps.apply(script);
    else if (script === removeTableScript()) nftRun(script);
    else applyRuleset(script, this.log);
    this.kernelPrint = this.inspect();
  }

  private inspect(): string | null | undefined {
    if (this.deps.inspect) return this.deps.inspect();
    return this.deps.apply ? undefined : kernelFingerprint();
  }

  private changed(): void {
    this.deps.onChange?.(this.status());
  }

  private checkScript(script: string): void {
    if (this.deps.check) this.deps.check(script);
    else if (!this.deps.apply) nftRun(script, { dryRun: true });
  }

  private environmentNow(config: FirewallConfig): { bridges: Bridge[]; external: string[] } {
    const bridges = config.container.enabled ? (this.deps.bridges ?? detectBridges)() : [];
    const external = this.deps.external ? this.deps.external() : (externalInterfaces() ?? defaultRouteInterfaces());
    return { bridges, external };
  }

  private build(rules: RuleSet, config = this.config): string {
    const env = this.environmentNow(config);
    this.environment = JSON.stringify(env);
    return buildRuleset({ config, rules, ...env });
  }

  /** The inputs a confirmation covers (rules and filtering options; not the environment or the window). */
  private inputsKey(rules: RuleSet, config: FirewallConfig): string {
    const { ipv6, container, firewall } = config;
    return createHash('sha256').update(JSON.stringify({ rules, ipv6, container, firewall })).digest('hex');
  }

  /** Boot: roll back an apply a dead daemon left unconfirmed; enforce confirmed rules; anything else gets the window. */
  start(): void {
    writeVersionCache(this.config.data_dir);
    if (this.fresh) {
      this.state = { ...initialState(), ...bothRules(initialRules(this.deps.firstStart?.())) };
      this.persist();
    }
    if (this.state.pending) {
      this.log.warn('unconfirmed apply found at start: restoring the last confirmed rules');
      this.rollback('daemon restarted during the confirmation window', 'system');
    } else {
      const script = this.build(this.state.current);
      const confirmed = this.store.confirmedScript();
      const header = `${HEADER}${this.inputsKey(this.state.current, this.config)}\n`;
      if (confirmed?.startsWith(header)) {
        // Confirmed inputs; only bridges or interfaces may differ since then.
        this.applyScript(script);
        this.applied = script;
        this.active = true;
        if (confirmed !== header + script) this.store.saveConfirmedScript(header + script);
        if (this.state.confirmed_config !== this.configText) {
          this.state.confirmed_config = this.configText;
          this.persist();
        }
        this.audit.write('boot_enforced', 'confirmed rules applied at start', 'system');
      } else {
        const why = this.fresh ? 'first start' : confirmed === null ? 'start without confirmed rules' : 'start: rules or options differ from the confirmed ones';
        this.activate({ rules: this.state.current, config: this.config }, 'system', why);
      }
    }
    this.watcher = setInterval(() => this.watchEnvironment(), ENVIRONMENT_POLL_MS);
    this.watcher.unref();
    this.changed();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.watcher) clearInterval(this.watcher);
    this.timer = undefined;
    this.watcher = undefined;
  }

  script(rules: RuleSet): string {
    return this.build(rules);
  }

  private persist(): void {
    this.store.save(this.state);
  }

  status(): Status {
    const p = this.state.pending;
    const kernel = this.kernelState();
    const inForce = this.inForce(kernel, !!p);
    return {
      active: this.active,
      acceptance: this.state.acceptance,
      has_pending: !!p,
      last_apply: this.state.last_apply,
      pending: p ? { ...p, remaining_seconds: Math.max(0, Math.ceil((Date.parse(p.deadline) - Date.now()) / 1000)) } : null,
      acceptance_enabled: this.config.acceptance.enabled,
      acceptance_duration: this.config.acceptance.duration,
      staged_changes: JSON.stringify(this.state.staged) !== JSON.stringify(this.state.current),
      protection: p ? 'pending' : this.active ? 'enforcing' : 'off',
      warning: this.warning(kernel, inForce),
      kernel,
      in_force: inForce,
    };
  }

  /** The options of the config file as it reads now, compared with the running ones (null: in force or no file). */
  private fileOptionsProblem(): { reason: InForceReason; message: string } | null {
    const file = this.deps.configFile;
    if (!file) return null;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      return { reason: 'ConfigInvalid', message: `cannot read ${file}: ${(e as Error).message}` };
    }
    if (text === this.configText) return null;
    const parsed = parseConfigText(text);
    if (!parsed.ok) return { reason: 'ConfigInvalid', message: `${file} is not valid (${parsed.problems.map((q) => `${q.path}: ${q.message}`).join('; ')}); the kernel enforces the options loaded before` };
    if (optionsKey(parsed.config) === optionsKey(this.config)) return null;
    if (this.state.acceptance === 'rolled_back' && this.rolledBackBecause !== null) {
      return {
        reason: 'RolledBack',
        message: `the options in ${file} are not in force: they were rolled back (${this.rolledBackBecause}) and the file could not be restored (read-only, e.g. a ConfigMap); the kernel enforces the last confirmed options. A restart of the daemon (or SIGHUP) tries them again with a new confirmation window`,
      };
    }
    return { reason: 'ConfigNotLoaded', message: `${file} changed since the daemon loaded it; the kernel enforces the options loaded before: SIGHUP (systemctl reload) applies it` };
  }

  /** See `Status.in_force`. */
  private inForce(kernel: KernelState | null, pending: boolean): InForce {
    if (kernel === null && this.deps.apply === undefined) return { ok: false, reason: 'KernelUnreadable', message: `our table inet ${TABLE} could not be read from the kernel` };
    if (kernel && !kernel.matches) return { ok: false, reason: 'KernelDiffers', message: `the kernel's table inet ${TABLE} differs from what the daemon applied` };
    if (pending) return { ok: false, reason: 'Pending', message: 'a change awaits confirmation; without it the previous rules come back' };
    if (!this.active) return { ok: false, reason: 'NotProtected', message: this.offReason ?? `no table inet ${TABLE} of ours in the kernel` };
    const problem = this.fileOptionsProblem();
    if (problem) return { ok: false, ...problem };
    return { ok: true, reason: 'Enforcing', message: `the kernel enforces the confirmed rules of the configured options (table inet ${TABLE})` };
  }

  private kernelState(): KernelState | null {
    try {
      const now = this.inspect();
      if (now === undefined || this.kernelPrint === undefined) return null;
      return { table: now !== null, matches: now === this.kernelPrint };
    } catch (e) {
      this.log.error({ err: e }, 'cannot read our table from the kernel');
      return null;
    }
  }

  /** The banner: the host is not protected as configured, why, and what to do. */
  private warning(kernel: KernelState | null, inForce?: InForce): string | null {
    if (kernel && !kernel.matches) {
      return `the kernel's table inet ${TABLE} ${kernel.table ? 'differs from' : 'is missing, unlike'} what the daemon applied (changed outside the daemon?): task-firewall apply, then task-firewall confirm, loads the daemon's rules again`;
    }
    if (inForce && ['RolledBack', 'ConfigNotLoaded', 'ConfigInvalid'].includes(inForce.reason)) return inForce.message;
    if (this.active || this.state.pending) return null;
    return `NOT PROTECTED: ${this.offReason ?? 'no table of ours in the kernel'}. To protect this host: task-firewall apply, then task-firewall confirm from a new SSH session within the window (unattended hosts: FIREWALL_SELF_CONFIRM, see docs/firewall.md)`;
  }

  rules(): { current: RuleSet; staged: RuleSet } {
    return { current: this.state.current, staged: this.state.staged };
  }

  /** Custom rules are vetted by nft's check mode; a refusal names the rule. */
  private checkCustom(custom: string[]): void {
    for (const [i, rule] of custom.entries()) {
      try {
        this.checkScript(buildRuleset({ config: this.config, rules: { ...emptyRules(), custom: [rule] }, bridges: [] }));
      } catch (e) {
        const why = ((e as { nftMessage?: string }).nftMessage ?? (e as Error).message).trim().split('\n')[0];
        throw new UserError('INVALID_RULES', `custom rule ${i + 1} ("${rule}") is not valid nft: ${why}`);
      }
    }
  }

  saveRules(ruleType: unknown, rules: unknown, actor: string): RuleSet {
    if (typeof ruleType !== 'string' || !(RULE_TYPES as readonly string[]).includes(ruleType)) {
      throw new UserError('INVALID_RULES', `rule_type must be one of ${RULE_TYPES.join(', ')}`);
    }
    const type = ruleType as RuleType;
    const parsed = ruleListSchemas[type].safeParse(rules);
    if (!parsed.success) throw new UserError('INVALID_RULES', `invalid ${type} rules: ${issuesText(parsed.error.issues)}`);
    if (type === 'custom') this.checkCustom(parsed.data as string[]);
    this.state.staged = { ...this.state.staged, [type]: parsed.data };
    this.persist();
    const size = (parsed.data as unknown[]).length;
    this.audit.write('rules_saved', `${size} ${type} rule(s) staged`, actor, type);
    return this.state.staged;
  }

  importRules(rules: unknown, actor: string): RuleSet {
    const parsed = ruleSetSchema.safeParse(rules);
    if (!parsed.success) throw new UserError('INVALID_RULES', `invalid rules: ${issuesText(parsed.error.issues)}`);
    this.checkCustom(parsed.data.custom);
    this.state.staged = parsed.data;
    this.persist();
    this.audit.write('rules_imported', 'staged rules replaced by import', actor);
    return this.state.staged;
  }

  /** Apply the staged rules (see `activate`). */
  apply(actor: string): Status {
    return this.activate({ rules: this.state.staged, config: this.config }, actor, 'applying staged rules');
  }

  /**
   * The one path for a ruleset change: one atomic kernel batch, then (acceptance enabled under the
   * configuration in force before the change) pending until confirmed, else committed at once.
   * `configText` is written to the config file first and restored if the kernel refuses the batch.
   */
  private activate(next: { rules: RuleSet; config: FirewallConfig; configText?: string }, actor: string, what: string): Status {
    if (this.state.pending) throw new UserError('APPLY_IN_PROGRESS', ERR_APPLY_IN_PROGRESS);
    const script = this.build(next.rules, next.config);
    const previousConfig = this.configText;
    const configChanged = next.configText !== undefined && next.configText !== previousConfig;
    const window = this.config.acceptance.enabled ? this.config.acceptance : next.config.acceptance;
    const before = { ...this.state };
    const now = new Date();
    // Write-ahead: the change is on disk as pending, with what to restore, before the config file or the
    // kernel is touched, so a daemon killed at any point of it rolls back at its next start.
    this.state = {
      ...this.state,
      current: next.rules,
      backup: this.state.current,
      backup_config: configChanged ? previousConfig : null,
      pending: { applied_at: now.toISOString(), deadline: new Date(now.getTime() + window.duration * 1000).toISOString() },
      acceptance: 'pending',
    };
    this.persist();
    try {
      // The file first (a refusal, e.g. read-only, changes nothing), then the kernel.
      if (configChanged) this.writeConfig(next.configText!);
      this.audit.write('apply_started', what, actor);
      this.applyScript(script);
    } catch (e) {
      // The batch was refused as a whole: the kernel still holds the previous ruleset untouched.
      if (configChanged && previousConfig !== null) this.writeConfig(previousConfig);
      this.state = before;
      this.persist();
      this.audit.write('apply_failed', (e as Error).message, actor);
      throw e instanceof UserError ? e : new UserError('APPLY_REFUSED', (e as Error).message);
    }
    this.config = next.config;
    this.applied = script;
    this.active = true;
    this.offReason = null;
    this.rolledBackBecause = null;
    this.state.last_apply = now.toISOString();
    this.generation++;
    if (!window.enabled) {
      this.commit();
      this.audit.write('apply_accepted', 'acceptance disabled: committed at once', actor);
      this.changed();
      return this.status();
    }
    this.persist();
    this.armTimer();
    this.startSelfConfirm();
    this.changed();
    return this.status();
  }

  /** Write the config file unless it already holds `text` (a reload; a read-only ConfigMap mount). */
  private writeConfig(text: string): void {
    const file = this.deps.configFile!;
    if (readFileSync(file, 'utf8') !== text) writeFileAtomic(file, text, statSync(file).mode & 0o777);
    this.configText = text;
  }

  /** The applied script becomes the confirmed one. */
  private commit(): void {
    if (this.applied !== null) this.store.saveConfirmedScript(`${HEADER}${this.inputsKey(this.state.current, this.config)}\n${this.applied}`);
    this.state.backup = null;
    this.state.backup_config = null;
    this.state.confirmed_config = this.configText;
    this.state.pending = null;
    this.state.acceptance = 'accepted';
    this.persist();
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

  /** FIREWALL_SELF_CONFIRM: probe every endpoint under the new rules until all answer or the window ends. */
  private startSelfConfirm(): void {
    const endpoints = this.deps.selfConfirm ?? [];
    if (!endpoints.length) return;
    const gen = this.generation;
    const probe = this.deps.probe ?? tcpProbe;
    const live = () => this.generation === gen && !!this.state.pending;
    void (async () => {
      while (live()) {
        const results = await Promise.all(endpoints.map(probe));
        if (!live()) return;
        if (results.every(Boolean)) {
          this.accept('self-confirm');
          return;
        }
        const failed = endpoints.filter((_, i) => !results[i]).map((e) => `${e.host}:${e.port}`);
        this.log.warn({ failed }, 'self-confirm: endpoints not reachable under the new rules; retrying');
        await new Promise((r) => setTimeout(r, 1000).unref());
      }
    })();
  }

  accept(actor: string): Status {
    if (!this.state.pending) throw new UserError('NOTHING_PENDING', ERR_NOTHING_PENDING);
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.commit();
    this.audit.write('apply_accepted', actor === 'self-confirm' ? 'confirmed: every FIREWALL_SELF_CONFIRM endpoint answered' : 'confirmed', actor);
    this.changed();
    return this.status();
  }

  /** Roll back now instead of waiting for the window (CLI `rollback`). */
  rollbackNow(actor: string): Status {
    if (!this.state.pending) throw new UserError('NOTHING_PENDING', ERR_NOTHING_PENDING);
    this.rollback('rolled back on request', actor);
    return this.status();
  }

  /**
   * Re-apply the last confirmed script (none: remove our table), restore the rules and, for an
   * options change, the config file (the unconfirmed one is kept next to it as `.unconfirmed`).
   */
  rollback(reason: string, actor: string): void {
    if (!this.state.pending) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.generation++;
    const file = this.deps.configFile;
    // Back to the configuration before this change, else the one the confirmed rules were built from
    // (a file edited while the daemon was down): never leave unconfirmed options for a later re-apply.
    const previousConfig = this.state.backup_config ?? (this.state.confirmed_config !== this.configText ? this.state.confirmed_config : null);
    if (previousConfig !== null && file) {
      try {
        if (this.configText !== null) writeFileAtomic(`${file}.unconfirmed`, this.configText);
        this.writeConfig(previousConfig);
      } catch (e) {
        // The kernel is restored regardless; the file keeps the unconfirmed options (next reload: a new window).
        this.audit.write('config_restore_failed', `could not restore ${file}: ${(e as Error).message}`, actor);
      }
      this.configText = previousConfig;
      const parsed = parseConfigText(previousConfig);
      if (parsed.ok) this.config = { ...parsed.config, socket_path: this.config.socket_path, data_dir: this.config.data_dir, log_dir: this.config.log_dir };
    }
    const backup = this.state.backup ?? this.state.current;
    this.state.current = backup;
    this.state.staged = backup;
    this.state.backup = null;
    this.state.backup_config = null;
    this.state.pending = null;
    this.state.acceptance = 'rolled_back';
    this.persist();
    this.rolledBackBecause = reason === 'timeout' ? `not confirmed within ${this.config.acceptance.duration} s` : reason;
    const confirmed = this.store.confirmedScript();
    const script = confirmed === null ? null : confirmed.slice(confirmed.indexOf('\n') + 1);
    try {
      this.applyScript(script ?? removeTableScript());
      this.applied = script;
      this.active = script !== null;
      this.audit.write('apply_rolledback', reason, actor);
      this.log.warn({ reason }, 'rules rolled back');
      if (script === null) {
        const why = reason === 'timeout' ? `not confirmed within ${this.config.acceptance.duration} s` : reason;
        this.offReason = `no rules were ever confirmed here, so the unconfirmed ones (${why}) were removed and the host has no task-firewall rules`;
        this.log.error(this.warning(null) ?? '');
      }
    } catch (e) {
      this.audit.write('rollback_failed', (e as Error).message, actor);
      this.log.error({ err: e }, 'rollback failed');
    }
    this.changed();
  }

  /** Remove our table (CLI `off`); a pending change is rolled back first. The next start or apply re-enables. */
  off(actor: string): Status {
    if (this.state.pending) this.rollback('firewall switched off', actor);
    this.applyScript(removeTableScript());
    this.applied = null;
    this.active = false;
    this.offReason = `switched off by ${actor} (task-firewall off)`;
    this.audit.write('firewall_off', `table removed; the daemon keeps running`, actor);
    this.log.warn(this.warning(null) ?? '');
    this.changed();
    return this.status();
  }

  /** New bridges or interfaces under confirmed inputs: rebuild and apply at once (nothing but them changes). */
  private watchEnvironment(): void {
    if (this.state.pending || !this.active || this.applied === null) return;
    try {
      const env = JSON.stringify(this.environmentNow(this.config));
      if (env === this.environment) return;
      const script = this.build(this.state.current);
      if (script === this.applied) return;
      // Only the environment may change here: the rules and options must be the confirmed ones.
      const confirmed = this.store.confirmedScript();
      if (!confirmed?.startsWith(`${HEADER}${this.inputsKey(this.state.current, this.config)}\n`)) {
        this.log.error('bridges or interfaces changed, but the running rules or options are not the confirmed ones: not re-applied');
        return;
      }
      this.applyScript(script);
      this.applied = script;
      this.store.saveConfirmedScript(`${HEADER}${this.inputsKey(this.state.current, this.config)}\n${script}`);
      this.audit.write('environment_applied', `bridges or external interfaces changed: ${env}`, 'system');
      this.log.info({ environment: env }, 'bridges or external interfaces changed: rules re-applied');
      this.changed();
    } catch (e) {
      this.log.error({ err: e }, 'could not apply the changed bridges or interfaces');
    }
  }

  /**
   * Administrative stop (SIGTERM, `systemctl stop`): a pending change is rolled back (no confirmation),
   * the last confirmed rules stay in the kernel. Returns what the kernel keeps, for the log.
   */
  shutdown(signal = 'SIGTERM'): string {
    this.stop();
    if (this.state.pending) this.rollback('daemon stopped during the confirmation window', 'system');
    const kept = this.active
      ? `the last confirmed rules stay in the kernel (table inet ${TABLE}) and keep filtering; task-firewall off removes them`
      : 'there is no task-firewall table in the kernel: the host is not protected by task-firewall';
    this.audit.write('daemon_stopped', `stopped by ${signal}: ${kept}`, 'system');
    return kept;
  }

  /**
   * Change option sections (acceptance, ipv6, container, firewall): each given section is merged key
   * by key, the whole file validated, and the change goes through `activate` like any other.
   * The paths (socket, data, log) are not changeable over the socket.
   */
  saveOptions(patch: unknown, actor: string): FirewallConfig {
    const file = this.deps.configFile;
    if (!file) throw new UserError('NO_CONFIG_FILE', 'no config file to write');
    const sections = ['acceptance', 'ipv6', 'container', 'firewall'];
    if (!patch || typeof patch !== 'object' || Array.isArray(patch)) throw new UserError('INVALID_OPTIONS', 'options must be an object of sections');
    const extra = Object.keys(patch).filter((k) => !sections.includes(k));
    if (extra.length) throw new UserError('INVALID_OPTIONS', `only ${sections.join(', ')} can be changed here (got ${extra.join(', ')})`);
    const raw = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    for (const [k, v] of Object.entries(patch as Record<string, unknown>)) {
      const cur = raw[k];
      raw[k] = v && typeof v === 'object' && !Array.isArray(v) && cur && typeof cur === 'object' ? { ...cur, ...v } : v;
    }
    this.changeConfig(`${JSON.stringify(raw, null, 2)}\n`, actor, 'options_saved', `changed ${Object.keys(patch).join(', ')}`, 'invalid options');
    return this.config;
  }

  /** Re-read the config file; an invalid file is refused and the running rules stay as they are. */
  reload(actor = 'system'): { ok: boolean; error?: string } {
    const file = this.deps.configFile;
    if (!file) return { ok: false, error: 'no config file to reload' };
    try {
      this.changeConfig(readFileSync(file, 'utf8'), actor, 'options_reloaded', 'configuration reloaded', `invalid configuration ${file}`);
      return { ok: true };
    } catch (e) {
      this.audit.write('config_rejected', (e as Error).message, actor);
      this.log.error({ err: e }, 'reload refused; keeping the running rules');
      return { ok: false, error: (e as Error).message };
    }
  }

  private changeConfig(text: string, actor: string, action: string, detail: string, invalid: string): void {
    const parsed = parseConfigText(text);
    if (!parsed.ok) throw new UserError('INVALID_OPTIONS', `${invalid}: ${parsed.problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`);
    const next = { ...parsed.config, socket_path: this.config.socket_path, data_dir: this.config.data_dir, log_dir: this.config.log_dir };
    if (this.build(this.state.current, next) !== this.applied) {
      this.activate({ rules: this.state.current, config: next, configText: text }, actor, detail);
      this.audit.write(action, detail, actor);
      return;
    }
    // Same ruleset (e.g. only the window changed): nothing to confirm.
    if (text !== this.configText) this.writeConfig(text);
    this.configText = text;
    this.config = next;
    if (!this.state.pending && this.applied !== null) {
      this.store.saveConfirmedScript(`${HEADER}${this.inputsKey(this.state.current, next)}\n${this.applied}`);
      this.state.confirmed_config = text;
      this.persist();
    }
    this.audit.write(action, `${detail}; ruleset unchanged`, actor);
  }
}

/** The options a ruleset is built from (not the window, not the paths). */
function optionsKey(config: FirewallConfig): string {
  const { ipv6, container, firewall } = config;
  return JSON.stringify({ ipv6, container, firewall });
}

function bothRules(rules: RuleSet): Pick<RulesState, 'current' | 'staged'> {
  return { current: rules, staged: rules };
}

function issuesText(issues: readonly { path: PropertyKey[]; message: string }[]): string {
  return issues
    .slice(0, 10)
    .map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.message}`)
    .join('; ');
}
