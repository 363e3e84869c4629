import { Ajv2020 } from 'ajv/dist/2020.js';
import { acceptanceSchema, configSchema, containerSchema, firewallSchema, ipv6Schema } from '@tasksvc/firewall/config.ts';
import { describe, expect, it } from 'vitest';
import { FIREWALL_PATH_DEFAULTS, firewallConfigSchema } from '../src/crd.ts';

/**
 * The CRD's spec.firewall.config is generated from the daemon's zod schema (crd.ts); these checks
 * fail when the two stop agreeing, e.g. after a hand edit of the CRD or a change the generator drops.
 */
type Node = { properties?: Record<string, Node> };
const crd = firewallConfigSchema as Node;
const props = (node: Node | undefined) => Object.keys(node?.properties ?? {}).sort();

describe("the CRD's firewall configuration", () => {
  it('has exactly the keys of the zod schema, section by section', () => {
    expect(props(crd)).toEqual(Object.keys(configSchema.shape).sort());
    const sections = { acceptance: acceptanceSchema, ipv6: ipv6Schema, container: containerSchema, firewall: firewallSchema };
    for (const [name, schema] of Object.entries(sections)) expect(props(crd.properties?.[name]), name).toEqual(Object.keys(schema.shape).sort());
  });

  it('defaults an empty section to what the daemon parses from a file with only the paths', () => {
    const validate = new Ajv2020({ strict: false, useDefaults: true }).compile(firewallConfigSchema);
    const applied = {};
    expect(validate(applied)).toBe(true);
    expect(applied).toEqual(configSchema.parse(FIREWALL_PATH_DEFAULTS));
  });

  it('accepts and rejects the same values as the daemon at every bound it checks', () => {
    const validate = new Ajv2020({ strict: false }).compile(firewallConfigSchema);
    const cases: Record<string, unknown>[] = [
      { acceptance: { duration: 9 } },
      { acceptance: { duration: 10 } },
      { acceptance: { duration: 3601 } },
      { firewall: { syn_flood_limit: 0 } },
      { firewall: { syn_flood_limit: 10000 } },
      { firewall: { connection_limit_max: 100001 } },
      { firewall: { ssh_brute_force_log_limit: 1_000_000 } },
      { firewall: { icmp_flood: 'yes' } },
      { container: { custom_networks: ['10.0.0.0/8', 'fd00::/8'] } },
      { container: { custom_networks: ['10.0.0.0'] } },
      { socket_path: '' },
    ];
    for (const c of cases) {
      const daemon = configSchema.safeParse({ ...FIREWALL_PATH_DEFAULTS, ...c }).success;
      expect(validate(c), JSON.stringify(c)).toBe(daemon);
    }
  });
});
