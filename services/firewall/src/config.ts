// Configuration file of the firewall daemon: the spec's tables as one strict zod schema.
// Pure parsing lives here; reading the file is the single I/O helper at the bottom.
import { readFileSync } from 'node:fs';
import { isIPv4, isIPv6 } from 'node:net';
import { z } from 'zod';

const bool = (d: boolean) => z.boolean().default(d);
const int = (d: number, min: number, max?: number) => {
  let s = z.number().int().min(min);
  if (max !== undefined) s = s.max(max);
  return s.default(d);
};

/** The spec's shape for a CIDR item: dotted IPv4 + 1–2 digit prefix, or hex/colon IPv6 + 1–3 digit prefix. */
export const CIDR_PATTERN = '^(?:(?:[0-9]{1,3}\\.){3}[0-9]{1,3}/[0-9]{1,2}|[0-9A-Fa-f:]+/[0-9]{1,3})$';

/** Beyond the pattern: octets, prefix lengths and IPv6 syntax must be real, or nft would refuse the apply. */
export function cidrProblem(value: string): string | undefined {
  const [addr = '', prefix = ''] = value.split('/');
  const bits = Number(prefix);
  if (isIPv4(addr)) return bits <= 32 ? undefined : 'IPv4 prefix must be 0 to 32';
  if (isIPv6(addr)) return bits <= 128 ? undefined : 'IPv6 prefix must be 0 to 128';
  return 'not a valid IPv4 or IPv6 address';
}

const cidrRe = new RegExp(CIDR_PATTERN);
const cidr = z
  .string()
  .regex(cidrRe, 'must be CIDR notation (address/prefix)')
  .superRefine((v, ctx) => {
    const p = cidrRe.test(v) ? cidrProblem(v) : undefined;
    if (p) ctx.addIssue({ code: 'custom', message: p });
  });

export const acceptanceSchema = z.strictObject({
  enabled: bool(true).describe('enables two-step activation (strongly recommended, prevents lockouts)'),
  duration: int(120, 10, 3600).describe('seconds to wait for confirmation before automatic rollback'),
});

export const ipv6Schema = z.strictObject({
  enabled: bool(true).describe('enable IPv6 rules; needs kernel IPv6 support'),
  icmp_allow_router_advertisement: bool(true).describe('allow ICMPv6 router advertisement (type 134); needed for SLAAC'),
  icmp_allow_neighbor_advertisement: bool(true).describe('allow ICMPv6 neighbor solicitation/advertisement (types 135/136)'),
});

export const containerSchema = z.strictObject({
  enabled: bool(false).describe('auto-detect container bridge interfaces and whitelist their networks'),
  allow_bridge_networks: bool(true).describe('add ACCEPT rules for detected bridge networks'),
  custom_networks: z.array(cidr).default([]).describe('extra networks to whitelist, in CIDR notation'),
});

export const firewallSchema = z.strictObject({
  ssh_brute_force: bool(true).describe('limit concurrent SSH connections per source IP'),
  ssh_brute_force_log: bool(false).describe('log dropped packets'),
  ssh_brute_force_connection_limit: int(5, 1, 100).describe('max concurrent SSH connections per source IP'),
  ssh_brute_force_log_limit: int(60, 1).describe('max log entries per minute'),
  icmp_flood: bool(true).describe('rate-limit ICMP per source IP'),
  icmp_flood_log: bool(false).describe('log dropped packets'),
  icmp_flood_connection_limit: int(10, 1, 1000).describe('max ICMP packets per second per source IP'),
  icmp_flood_log_limit: int(60, 1).describe('max log entries per minute'),
  syn_flood: bool(true).describe('rate-limit new TCP SYN per source IP'),
  syn_flood_log: bool(false).describe('log dropped packets'),
  syn_flood_limit: int(100, 1, 10000).describe('max new TCP connections per second per source IP'),
  port_scan: bool(true).describe('drop NULL, FIN, XMAS and other probe packets'),
  port_scan_log: bool(false).describe('log detected packets'),
  drop_invalid_packets: bool(true).describe('drop connection-tracking state invalid'),
  drop_invalid_packets_log: bool(false).describe('log dropped packets'),
  drop_fragments: bool(false).describe('drop IP-fragmented packets; may break large-MTU traffic'),
  drop_fragments_log: bool(false).describe('log dropped packets'),
  bogon_filter: bool(false).describe('drop private-range (RFC 1918) sources arriving on external interfaces'),
  bogon_filter_log: bool(false).describe('log dropped packets'),
  connection_limit_per_ip: bool(false).describe('limit simultaneous connections per source IP'),
  connection_limit_max: int(100, 1, 100000).describe('max simultaneous connections per source IP'),
  tcp_rst_flood: bool(false).describe('rate-limit RST packets per source IP'),
  tcp_rst_flood_log: bool(false).describe('log dropped packets'),
  tcp_rst_flood_limit: int(100, 1, 10000).describe('max RST packets per second per source IP'),
  drop_broadcast: bool(false).describe('drop packets of type broadcast'),
  drop_multicast: bool(false).describe('drop packets of type multicast'),
  drop_anycast: bool(false).describe('drop packets of type anycast'),
  log_blocked_connections: bool(false).describe('log all packets dropped by the final DROP policy'),
  log_blocked_connections_limit: int(60, 1).describe('max log entries per minute'),
  log_blacklist_connections: bool(false).describe('log packets dropped by the IP blacklist'),
  log_blacklist_connections_limit: int(60, 1).describe('max log entries per minute'),
});

const path = (d: string) => z.string().min(1).max(4096).describe(d);

// `prefault` (not `default`) so an absent section is parsed and gets every inner default.
export const configSchema = z
  .strictObject({
    socket_path: path('Unix socket shared by the core daemon and the web component, e.g. /run/task-firewall/core.sock'),
    data_dir: path('persistent data directory (rules.json, version cache), e.g. /var/lib/task-firewall'),
    log_dir: path('log directory (audit.log), e.g. /var/log/task-firewall'),
    acceptance: acceptanceSchema.prefault({}),
    ipv6: ipv6Schema.prefault({}),
    container: containerSchema.prefault({}),
    firewall: firewallSchema.prefault({}),
  })
  .describe('Firewall daemon configuration');

export type FirewallConfig = z.output<typeof configSchema>;
export type FirewallOptions = FirewallConfig['firewall'];

export interface ConfigProblem {
  /** JSON path such as `firewall.syn_flood_limit` or `container.custom_networks[2]`; `(root)` for the top. */
  path: string;
  message: string;
}

export function formatPath(parts: readonly PropertyKey[]): string {
  let out = '';
  for (const p of parts) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out ? `.${String(p)}` : String(p);
  }
  return out || '(root)';
}

/** Every problem of a zod error, one per JSON path (unknown keys are reported one path each). */
export function problemsOf(error: z.ZodError): ConfigProblem[] {
  const out: ConfigProblem[] = [];
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) out.push({ path: formatPath([...issue.path, key]), message: 'unknown key (objects are closed)' });
    } else {
      out.push({ path: formatPath(issue.path), message: issue.message });
    }
  }
  return out;
}

export type ParseResult = { ok: true; config: FirewallConfig } | { ok: false; problems: ConfigProblem[] };

export function parseConfig(raw: unknown): ParseResult {
  const r = configSchema.safeParse(raw);
  return r.success ? { ok: true, config: r.data } : { ok: false, problems: problemsOf(r.error) };
}

/** Parse the JSON text of a config file; syntax errors are reported as a root problem. */
export function parseConfigText(text: string): ParseResult {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    return { ok: false, problems: [{ path: '(root)', message: `invalid JSON: ${(e as Error).message}` }] };
  }
  return parseConfig(raw);
}

export function readConfigFile(file: string): ParseResult {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    return { ok: false, problems: [{ path: '(root)', message: `cannot read ${file}: ${(e as Error).message}` }] };
  }
  return parseConfigText(text);
}

export class ConfigError extends Error {
  readonly problems: ConfigProblem[];
  constructor(file: string, problems: ConfigProblem[]) {
    super(`invalid configuration ${file}:\n${problems.map((p) => `  ${p.path}: ${p.message}`).join('\n')}`);
    this.problems = problems;
  }
}

export function loadConfigFile(file: string): FirewallConfig {
  const r = readConfigFile(file);
  if (!r.ok) throw new ConfigError(file, r.problems);
  return r.config;
}
