/**
 * skaffold cannot run here (no binary, no container engine): validate skaffold.yaml against the
 * published v4beta13 JSON schema (from ../shared/schemas) and check every path and target it names.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseDockerfile } from './dockerfile.ts';
import { REPO, SHARED } from './paths.ts';

const schemaFile = join(SHARED, 'schemas', 'skaffold-v4beta13.json');
const haveSchema = existsSync(schemaFile);
if (!haveSchema) console.warn(`\n*** SKIPPING skaffold schema validation: ${schemaFile} is absent (CI has ../shared beside the checkout) ***\n`);

const config = parse(readFileSync(join(REPO, 'skaffold.yaml'), 'utf8'));
const targets = new Set(parseDockerfile(readFileSync(join(REPO, 'Dockerfile'), 'utf8')).stages.map((s) => s.name));
const TARGETS = ['gateway', 'auth', 'tasks', 'notifier', 'webhook', 'scheduler', 'firewall', 'operator'];

/** RFC 6902 `add` (all the profiles use), enough to check that each profile's patches apply. */
function applyAdd(doc: unknown, path: string, value: unknown): unknown {
  const out = structuredClone(doc) as Record<string, unknown>;
  const parts = path.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  let node: any = out; // eslint-disable-line @typescript-eslint/no-explicit-any
  for (const p of parts.slice(0, -1)) {
    if (node[p] === undefined) throw new Error(`patch path ${path}: ${p} does not exist`);
    node = node[p];
  }
  node[parts.at(-1) as string] = value;
  return out;
}

describe('skaffold.yaml', () => {
  it.skipIf(!haveSchema)('is valid against the skaffold v4beta13 schema, with every profile applied too', () => {
    const ajv = new Ajv({ strict: false, allErrors: true });
    const validate = ajv.compile(JSON.parse(readFileSync(schemaFile, 'utf8')));
    expect(config.apiVersion).toBe('skaffold/v4beta13');
    expect(validate(config), JSON.stringify(validate.errors)).toBe(true);
    for (const profile of config.profiles ?? []) {
      let patched: unknown = config;
      for (const p of profile.patches ?? []) {
        expect(p.op).toBe('add');
        patched = applyAdd(patched, p.path, p.value);
      }
      expect(validate(patched), `${profile.name}: ${JSON.stringify(validate.errors)}`).toBe(true);
    }
    // the validator rejects what it should
    expect(validate({ ...config, build: { ...config.build, artifacts: [{ image: 'x', docker: { target: 1 } }] } })).toBe(false);
  });

  it('builds every Dockerfile target from the root Dockerfile', () => {
    const arts = config.build.artifacts as { image: string; docker: { dockerfile: string; target: string } }[];
    expect(arts.map((a) => a.docker.target).sort()).toEqual([...TARGETS].sort());
    for (const a of arts) {
      expect(targets.has(a.docker.target), a.docker.target).toBe(true);
      expect(existsSync(join(REPO, a.docker.dockerfile))).toBe(true);
      expect(a.image).toBe(`task-service-${a.docker.target}`);
    }
  });

  it('deploys through the chart; every referenced path exists; a k3d profile exists', () => {
    const releases = config.deploy.helm.releases as { chartPath: string; setValueTemplates: Record<string, string> }[];
    for (const r of releases) {
      expect(existsSync(join(REPO, r.chartPath, 'Chart.yaml')), r.chartPath).toBe(true);
      // every image template names a built artifact
      for (const tpl of Object.values(r.setValueTemplates)) {
        const m = /IMAGE_FULLY_QUALIFIED_(\w+)/.exec(tpl);
        if (m) expect(TARGETS.map((t) => `task_service_${t}`)).toContain(m[1]);
      }
    }
    const k3d = (config.profiles as { name: string; patches: { path: string; value: unknown }[] }[]).find((p) => p.name === 'k3d');
    expect(k3d).toBeDefined();
    for (const p of k3d?.patches ?? []) {
      if (p.path.endsWith('/valuesFiles')) for (const f of p.value as string[]) expect(existsSync(join(REPO, f)), f).toBe(true);
    }
  });
});
