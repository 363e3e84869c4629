// The user's rule lists (easywall 2.x rules.json shape) and their validation. Pure.
import { isIP } from 'node:net';
import { z } from 'zod';
import { cidrProblem } from './config.ts';
import { unmapAddress } from './net.ts';

/** "22", "8000:9000" (easywall) or "8000-9000"; ports 1–65535, range ascending. */
export function portProblem(value: string): string | undefined {
  const m = /^(\d{1,5})(?:[:-](\d{1,5}))?$/.exec(value);
  if (!m) return 'must be a port (22) or a range (8000:9000)';
  const a = Number(m[1]);
  const b = m[2] === undefined ? a : Number(m[2]);
  if (a < 1 || b > 65535 || b < 1 || a > 65535) return 'ports must be 1 to 65535';
  if (b < a) return 'range must be ascending';
  return undefined;
}

/** Single address or CIDR network, IPv4 or IPv6. */
export function addressProblem(value: string): string | undefined {
  if (value.includes('/')) return /^[0-9A-Fa-f:.]+\/\d{1,3}$/.test(value) ? cidrProblem(value) : 'not a valid network';
  return isIP(value) ? undefined : 'not a valid IPv4 or IPv6 address';
}

const refined = (check: (v: string) => string | undefined) =>
  z
    .string()
    .max(64)
    .superRefine((v, ctx) => {
      const p = check(v);
      if (p) ctx.addIssue({ code: 'custom', message: p });
    });

export const portRuleSchema = z.strictObject({
  port: refined(portProblem),
  description: z.string().max(200).default(''),
  ssh: z.boolean().default(false),
});

export const forwardingRuleSchema = z.strictObject({
  protocol: z.enum(['tcp', 'udp']),
  source_port: z.number().int().min(1).max(65535),
  dest_port: z.number().int().min(1).max(65535),
});

/** Custom rules are nft rule statements added to the input chain; nft's check mode vets them at save. */
const customRule = z
  .string()
  .min(1)
  .max(1000)
  .refine((v) => !/[;\n\r{}]/.test(v), 'one rule statement per item (no ; { } or newlines)');

// Up to a million list entries: sets make that cheap for the kernel (see tools/bench/firewall.ts).
const MAX_LIST = 1_000_000;

export const ruleListSchemas = {
  tcp: z.array(portRuleSchema).max(10_000),
  udp: z.array(portRuleSchema).max(10_000),
  blacklist: z.array(refined(addressProblem).transform(unmapAddress)).max(MAX_LIST),
  whitelist: z.array(refined(addressProblem).transform(unmapAddress)).max(MAX_LIST),
  forwarding: z.array(forwardingRuleSchema).max(10_000),
  custom: z.array(customRule).max(10_000),
} as const;

export const RULE_TYPES = ['tcp', 'udp', 'blacklist', 'whitelist', 'forwarding', 'custom'] as const;
export type RuleType = (typeof RULE_TYPES)[number];

export const ruleSetSchema = z.strictObject({
  tcp: ruleListSchemas.tcp.default([]),
  udp: ruleListSchemas.udp.default([]),
  blacklist: ruleListSchemas.blacklist.default([]),
  whitelist: ruleListSchemas.whitelist.default([]),
  forwarding: ruleListSchemas.forwarding.default([]),
  custom: ruleListSchemas.custom.default([]),
});

export type RuleSet = z.output<typeof ruleSetSchema>;
export type PortRule = z.output<typeof portRuleSchema>;

export function emptyRules(): RuleSet {
  return { tcp: [], udp: [], blacklist: [], whitelist: [], forwarding: [], custom: [] };
}

/**
 * A fresh install keeps SSH reachable so the first apply cannot lock the operator out: 22, every port
 * the SSH daemon listens on, and the web component's port.
 */
export function initialRules(opts: { sshPorts?: number[]; webPort?: number } = {}): RuleSet {
  const ssh = [...new Set([22, ...(opts.sshPorts ?? [])])].map((p) => ({ port: String(p), description: 'ssh', ssh: true }));
  const web = opts.webPort && !ssh.some((r) => r.port === String(opts.webPort)) ? [{ port: String(opts.webPort), description: 'task-firewall web', ssh: false }] : [];
  return { ...emptyRules(), tcp: [...ssh, ...web] };
}
