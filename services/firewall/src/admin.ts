// The admin CLI's commands (`task-firewall status|rules|allow|deny|apply|confirm|rollback|log|off`):
// each is a request to the core socket; the words the web UI shows, for a terminal.
import { isIP } from 'node:net';
import { readConfigFile } from './config.ts';
import type { Status } from './core.ts';
import { nftRun } from './nft.ts';
import { removeTableScript, TABLE } from './ruleset.ts';
import type { PortRule, RuleSet } from './rules.ts';
import { request, type Reply } from './socket.ts';
import type { AuditEntry } from './store.ts';

export const DEFAULT_CONFIG = '/etc/task-firewall/config.json';

export interface Io {
  out: (line: string) => void;
  /** Live countdown line on a terminal (rewritten in place); undefined when not a TTY. */
  live?: (line: string) => void;
  /** Resolves when the operator presses Enter (TTY only). */
  enter?: () => Promise<void>;
}

export class CliError extends Error {}

/** `--socket PATH`, else socket_path of `--config FILE` (default /etc/task-firewall/config.json). */
export function socketOf(args: string[]): string {
  const opt = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : args.find((a) => a.startsWith(`${name}=`))?.slice(name.length + 1);
  };
  const socket = opt('--socket');
  if (socket) return socket;
  const file = opt('--config') ?? DEFAULT_CONFIG;
  const r = readConfigFile(file);
  if (!r.ok) throw new CliError(`cannot use ${file}: ${r.problems.map((p) => `${p.path}: ${p.message}`).join('; ')} (or pass --socket PATH)`);
  return r.config.socket_path;
}

async function call(socket: string, type: string, payload: Record<string, unknown> = {}): Promise<unknown> {
  let reply: Reply;
  try {
    reply = await request(socket, type, { actor: `cli:${process.env.SUDO_USER ?? process.env.USER ?? 'root'}`, ...payload });
  } catch (e) {
    throw new CliError(`cannot reach the core daemon at ${socket}: ${(e as Error).message} (is task-firewall-core running?)`);
  }
  if (!reply.success) throw new CliError(reply.error ?? `${type} failed`);
  return reply.data;
}

/** One line for systemd (`systemctl status` shows it as Status:) and the log. */
export function statusSummary(s: Status): string {
  if (s.warning) return s.warning;
  if (s.pending) return `PENDING: confirm by ${s.pending.deadline} (task-firewall confirm), or the previous rules come back`;
  return `enforcing the confirmed rules (table inet ${TABLE})`;
}

function kernelLine(s: Status): string {
  if (!s.kernel) return 'kernel: could not be read';
  if (!s.kernel.table) return `kernel: no table inet ${TABLE}${s.kernel.matches ? ' (as the daemon says)' : ' (the daemon says it is loaded: it is NOT)'}`;
  return `kernel: table inet ${TABLE} ${s.kernel.matches ? `holds what the daemon applied (${s.pending ? 'pending' : 'confirmed'} rules)` : 'DIFFERS from what the daemon applied'}`;
}

export function statusLines(s: Status): string[] {
  const banner = s.warning ? ['!'.repeat(72), `! ${s.warning}`, '!'.repeat(72)] : [];
  const lines = [...banner, `firewall: ${s.active ? `active (table inet ${TABLE})` : 'off (no table of ours in the kernel)'}`];
  if (s.pending) lines.push(`state: PENDING: confirm within ${s.pending.remaining_seconds} s (task-firewall confirm), or it is rolled back (task-firewall rollback to do it now)`);
  else lines.push(`state: ${s.acceptance}${s.last_apply ? `, last apply ${s.last_apply}` : ''}`);
  lines.push(kernelLine(s));
  lines.push(`two-step activation: ${s.acceptance_enabled ? `on, ${s.acceptance_duration} s` : 'off'}`);
  if (s.staged_changes) lines.push('staged changes not applied yet: task-firewall apply');
  // What a supervisor's readiness check sees (ready.ts): one word, the rest is in the banner.
  if (s.in_force) lines.push(`configured options in force: ${s.in_force.ok ? 'yes' : `NO (${s.in_force.reason})`}`);
  return lines;
}

const ports = (rules: PortRule[]) => rules.map((r) => `${r.port}${r.ssh ? ' (ssh)' : ''}${r.description ? ` ${r.description}` : ''}`).join(', ') || '-';

export function rulesLines(rs: RuleSet): string[] {
  return [
    `tcp:       ${ports(rs.tcp)}`,
    `udp:       ${ports(rs.udp)}`,
    `whitelist: ${rs.whitelist.join(', ') || '-'}`,
    `blacklist: ${rs.blacklist.join(', ') || '-'}`,
    `forwarding: ${rs.forwarding.map((f) => `${f.protocol} ${f.source_port}->${f.dest_port}`).join(', ') || '-'}`,
    `custom:    ${rs.custom.length ? '' : '-'}`,
    ...rs.custom.map((c) => `  ${c}`),
  ];
}

/** `443/tcp`, `53/udp`, `8000:9000` (tcp when no protocol). */
function parsePort(arg: string): { proto: 'tcp' | 'udp'; port: string } | undefined {
  const m = /^(\d{1,5}(?:[:-]\d{1,5})?)(?:\/(tcp|udp))?$/.exec(arg);
  return m ? { port: m[1]!.replace('-', ':'), proto: (m[2] as 'tcp' | 'udp' | undefined) ?? 'tcp' } : undefined;
}

const isAddress = (a: string) => isIP(a.split('/')[0] ?? '') !== 0;

/** allow PORT/PROTO | allow ADDR (whitelist); deny ADDR (blacklist) | deny PORT/PROTO (close it). Stages only. */
async function stage(socket: string, verb: 'allow' | 'deny', arg: string | undefined, io: Io): Promise<void> {
  if (!arg) throw new CliError(`usage: task-firewall ${verb} PORT[/tcp|udp] | ADDRESS[/PREFIX]`);
  const { staged } = (await call(socket, 'GET_RULES')) as { staged: RuleSet };
  const port = parsePort(arg);
  let type: keyof RuleSet;
  let rules: unknown[];
  if (port) {
    type = port.proto;
    const rest = staged[type].filter((r) => r.port !== port.port);
    rules = verb === 'allow' ? [...rest, { port: port.port, description: 'task-firewall allow', ssh: false }] : rest;
    if (verb === 'deny' && rest.length === staged[type].length) throw new CliError(`${port.port}/${type} is not open`);
  } else if (isAddress(arg)) {
    type = verb === 'allow' ? 'whitelist' : 'blacklist';
    const other = verb === 'allow' ? 'blacklist' : 'whitelist';
    if (staged[other].includes(arg)) await call(socket, 'SAVE_RULES', { rule_type: other, rules: staged[other].filter((a) => a !== arg) });
    rules = staged[type].includes(arg) ? staged[type] : [...staged[type], arg];
  } else {
    throw new CliError(`${arg} is neither a port (443/tcp) nor an address (203.0.113.7, 10.0.0.0/8)`);
  }
  await call(socket, 'SAVE_RULES', { rule_type: type, rules });
  io.out(`staged: ${verb} ${arg} (${type}); run task-firewall apply to activate`);
}

/** After an apply: on a terminal a live countdown (Enter confirms); otherwise one line. */
async function awaitConfirmation(socket: string, first: Status, io: Io): Promise<void> {
  if (!first.pending) {
    io.out(statusLines(first)[1]!);
    return;
  }
  if (!io.live || !io.enter) {
    io.out(statusLines(first)[1]!);
    return;
  }
  let confirmed = false;
  void io.enter().then(async () => {
    confirmed = true;
    await call(socket, 'ACCEPT').catch(() => undefined);
  });
  for (;;) {
    const s = (await call(socket, 'GET_STATUS')) as Status;
    if (!s.pending) {
      io.out(s.acceptance === 'accepted' ? '\nconfirmed: the new rules stay' : `\n${s.acceptance}: the previous rules are back`);
      return;
    }
    if (!confirmed) io.live(`pending: ${s.pending.remaining_seconds} s left. Press Enter to confirm (if you can, your session survived); Ctrl-C leaves it to the window`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

export async function runAdmin(cmd: string, args: string[], io: Io): Promise<void> {
  const socket = socketOf(args);
  const positional = args.filter((a, i) => !a.startsWith('--') && !['--socket', '--config'].includes(args[i - 1] ?? ''));
  switch (cmd) {
    case 'status':
      for (const l of statusLines((await call(socket, 'GET_STATUS')) as Status)) io.out(l);
      return;
    case 'rules': {
      const { current, staged } = (await call(socket, 'GET_RULES')) as { current: RuleSet; staged: RuleSet };
      io.out('applied:');
      for (const l of rulesLines(current)) io.out(`  ${l}`);
      if (JSON.stringify(current) !== JSON.stringify(staged)) {
        io.out('staged (task-firewall apply):');
        for (const l of rulesLines(staged)) io.out(`  ${l}`);
      }
      return;
    }
    case 'allow':
    case 'deny':
      return stage(socket, cmd, positional[0], io);
    case 'apply':
      return awaitConfirmation(socket, (await call(socket, 'APPLY_RULES')) as Status, io);
    case 'confirm':
      await call(socket, 'ACCEPT');
      io.out('confirmed: the applied rules stay');
      return;
    case 'rollback':
      await call(socket, 'ROLLBACK');
      io.out('rolled back: the last confirmed rules are active again');
      return;
    case 'log': {
      const limit = Number(positional[0] ?? 20);
      for (const e of (await call(socket, 'GET_LOG', { limit: Number.isInteger(limit) && limit > 0 ? limit : 20 })) as AuditEntry[]) {
        io.out(`${e.time}  ${e.action.padEnd(18)} ${e.actor.padEnd(16)} ${e.rule_type ? `[${e.rule_type}] ` : ''}${e.detail}`);
      }
      return;
    }
    case 'off':
      try {
        await call(socket, 'OFF');
      } catch (e) {
        if (!(e instanceof CliError) || !e.message.startsWith('cannot reach')) throw e;
        // No daemon: remove the table directly (root, libnftables).
        nftRun(removeTableScript());
      }
      io.out(`firewall off: table inet ${TABLE} removed (other tables untouched). Starting the daemon or an apply brings it back.`);
      return;
    default:
      throw new CliError(`unknown command ${cmd}`);
  }
}

export const ADMIN_COMMANDS = ['status', 'rules', 'allow', 'deny', 'apply', 'confirm', 'rollback', 'log', 'off'];
