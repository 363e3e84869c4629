/* eslint-disable @typescript-eslint/no-explicit-any -- tests read deep into untyped Kubernetes objects */
/** L0: one TaskService is a whole system: generated secrets, NATS, database, ingress, HPA-owned replicas. */
import { describe, expect, it } from 'vitest';
import { InvalidTaskServiceError, plan, retainsData, wiring, type CronJobApiVersion } from '../src/desired.ts';
import { ACCEPT_KEYS_ANNOTATION, checkKeys, decideKeys } from '../src/keys.ts';
import { generateValue } from '../src/reconciler.ts';
import { SERVICES } from '../src/crd.ts';
import { bytes, cores, MEASURED } from '../src/sizing.ts';
import { normalizeSpec, type TaskService } from '../src/types.ts';
import { minimal } from './fixtures.ts';
import { validateObject } from './validate.ts';

const opts = { cronJobApiVersion: 'batch/v1' as CronJobApiVersion };
/** Only a database reference and an ingress: everything else comes from the operator. */
const bare = (): TaskService => {
  const ts = minimal('sys');
  ts.spec = { database: { secretKeyRef: { name: 'pg-app', key: 'uri' } }, ingress: { className: 'nginx', host: 'tasks.example.com', tlsSecretName: 'tasks-tls' } } as any;
  return ts;
};
const find = (ts: TaskService, kind: string, name: string) => plan(ts, opts).objects.find((o) => o.kind === kind && o.metadata.name === name) as any;
const env = (ts: TaskService, svc = 'auth') => Object.fromEntries(find(ts, 'Deployment', `sys-${svc}`).spec.template.spec.containers[0].env.filter((e: any) => e.valueFrom).map((e: any) => [e.name, e.valueFrom.secretKeyRef]));

describe('one TaskService is a system (L0)', () => {
  it('generates AUTH_SECRET, CRON_SECRET, TOTP_ENCRYPTION_KEY, SECRETS_KEYRING and NATS credentials into <name>-generated when none is referenced', () => {
    const w = wiring(bare(), normalizeSpec(bare().spec));
    expect(w.generatedKeys).toEqual(['AUTH_SECRET', 'CRON_SECRET', 'TOTP_ENCRYPTION_KEY', 'SECRETS_KEYRING', 'NATS_USER', 'NATS_PASSWORD']);
    expect(env(bare())).toEqual({
      DATABASE_URL: { name: 'pg-app', key: 'uri' },
      AUTH_SECRET: { name: 'sys-generated', key: 'AUTH_SECRET' },
      TOTP_ENCRYPTION_KEY: { name: 'sys-generated', key: 'TOTP_ENCRYPTION_KEY' },
      NATS_USER: { name: 'sys-generated', key: 'NATS_USER' },
      NATS_PASSWORD: { name: 'sys-generated', key: 'NATS_PASSWORD' },
    });
    // the master key ring reaches no Deployment; each ring service gets its own derived ring
    for (const svc of ['webhook', 'notifier']) expect(env(bare(), svc).SECRETS_SUBKEYS, svc).toEqual({ name: `sys-${svc}-keys`, key: 'SECRETS_SUBKEYS' });
    for (const svc of ['auth', 'tasks', 'scheduler', 'gateway', 'webhook', 'notifier']) expect(env(bare(), svc), svc).not.toHaveProperty('SECRETS_KEYRING');
    for (const svc of ['auth', 'tasks', 'scheduler', 'gateway']) expect(env(bare(), svc), svc).not.toHaveProperty('SECRETS_SUBKEYS');
    // CRON_SECRET only to the gateway (it checks POST /api/cron) and the CronJob
    expect(env(bare(), 'gateway').CRON_SECRET).toEqual({ name: 'sys-generated', key: 'CRON_SECRET' });
    // the shapes the runtime accepts (services/runtime/src/config.ts)
    expect(generateValue('TOTP_ENCRYPTION_KEY')).toMatch(/^[0-9a-f]{64}$/);
    expect(generateValue('SECRETS_KEYRING')).toMatch(/^generated:[0-9a-f]{64}$/);
    expect(generateValue('AUTH_SECRET').length).toBeGreaterThanOrEqual(32);
    expect(generateValue('AUTH_SECRET')).not.toBe(generateValue('AUTH_SECRET'));
    // a referenced secret is used and not generated
    const ts = bare();
    (ts.spec as any).secrets = { authSecret: { name: 'mine', key: 'AUTH_SECRET' } };
    expect(wiring(ts, normalizeSpec(ts.spec)).generatedKeys).not.toContain('AUTH_SECRET');
  });

  it('runs NATS (official image, JetStream, auth, persistent volume) when none is referenced', () => {
    const sts = find(bare(), 'StatefulSet', 'sys-nats');
    const c = sts.spec.template.spec.containers[0];
    expect(c.image).toBe('nats:2.11-alpine');
    expect(c.args).toEqual(expect.arrayContaining(['--jetstream', '--user=$(NATS_USER)', '--pass=$(NATS_PASSWORD)']));
    expect(sts.spec.volumeClaimTemplates[0].spec.resources.requests.storage).toBe('2Gi');
    expect(find(bare(), 'ConfigMap', 'sys-config').data.NATS_URL).toBe('nats://sys-nats.apps.svc:4222');
    for (const o of plan(bare(), opts).objects) expect(validateObject(o as any), `${o.kind}/${o.metadata.name}`).toEqual([]);

    const ext = bare();
    (ext.spec as any).nats = { url: 'nats://bus.messaging:4222', credentialsSecret: { name: 'bus-creds' } };
    expect(find(ext, 'StatefulSet', 'sys-nats')).toBeUndefined();
    expect(wiring(ext, normalizeSpec(ext.spec)).generatedKeys).not.toContain('NATS_PASSWORD');
    // the existing server's credentials, key by key (only the keys the Secret holds are set)
    expect(env(ext, 'tasks')).toMatchObject({ NATS_USER: { name: 'bus-creds', key: 'NATS_USER', optional: true }, NATS_TOKEN: { name: 'bus-creds', key: 'NATS_TOKEN', optional: true } });
  });

  it('an Ingress to the gateway with TLS; PUBLIC_APP_URL derived from its host', () => {
    const ing = find(bare(), 'Ingress', 'sys-gateway');
    expect(ing.spec.ingressClassName).toBe('nginx');
    expect(ing.spec.tls).toEqual([{ hosts: ['tasks.example.com'], secretName: 'tasks-tls' }]);
    expect(ing.spec.rules[0].http.paths[0].backend.service).toEqual({ name: 'sys-gateway', port: { number: 3000 } });
    expect(find(bare(), 'ConfigMap', 'sys-config').data).toMatchObject({ PUBLIC_APP_URL: 'https://tasks.example.com', AUTH_CALLBACK_URL: 'https://tasks.example.com' });
  });

  it('database: a Secret key, or a CloudNativePG Cluster when its CRD is there (a condition when not); none is an invalid spec', () => {
    const ts = bare();
    (ts.spec as any).database = { managed: { instances: 2 } };
    expect(env(ts).DATABASE_URL).toEqual({ name: 'sys-db-app', key: 'uri' });
    const withCnpg = plan(ts, { ...opts, cloudNativePG: true });
    expect(withCnpg.objects.find((o) => o.kind === 'Cluster')).toMatchObject({ apiVersion: 'postgresql.cnpg.io/v1', metadata: { name: 'sys-db' }, spec: { instances: 2 } });
    const without = plan(ts, { ...opts, cloudNativePG: false });
    expect(without.objects.find((o) => o.kind === 'Cluster')).toBeUndefined();
    expect(without.conditions).toContainEqual(expect.objectContaining({ type: 'Database', status: 'False', reason: 'CloudNativePGMissing' }));
    (ts.spec as any).database = undefined;
    expect(() => plan(ts, opts)).toThrow(InvalidTaskServiceError);
    (ts.spec as any).database = { secretKeyRef: { name: 'pg-app' } };
    (ts.spec as any).ingress = undefined;
    expect(() => plan(ts, opts)).toThrow(/publicUrl/);
  });

  it('an upgrade (spec.version) changes the services\' pod templates but not the NATS one, so the bus keeps running (issue 59 #1)', () => {
    const v = (version: string) => {
      const ts = bare();
      (ts.spec as any).version = version;
      return ts;
    };
    const template = (ts: TaskService, kind: string, name: string) => find(ts, kind, name).spec.template;
    expect(template(v('1.4.2'), 'StatefulSet', 'sys-nats')).toEqual(template(v('1.5.0'), 'StatefulSet', 'sys-nats'));
    expect(template(v('1.4.2'), 'Deployment', 'sys-tasks')).not.toEqual(template(v('1.5.0'), 'Deployment', 'sys-tasks'));
    // the StatefulSet object itself still says which release manages it
    expect(find(v('1.5.0'), 'StatefulSet', 'sys-nats').metadata.labels['app.kubernetes.io/version']).toBe('1.5.0');
  });

  it('a managed database is retained by default: the Cluster carries no owner reference unless deletionPolicy is Delete (issue 59 #4)', () => {
    const ts = bare();
    (ts.spec as any).database = { managed: {} };
    const cluster = (t: TaskService) => plan(t, { ...opts, cloudNativePG: true }).objects.find((o) => o.kind === 'Cluster') as any;
    expect(normalizeSpec(ts.spec).database?.managed?.deletionPolicy).toBe('Retain');
    expect(cluster(ts).metadata.ownerReferences).toBeUndefined();
    expect(cluster(ts).metadata.labels).toMatchObject({ 'tasks.example.io/owner-name': 'sys', 'tasks.example.io/owner-namespace': 'apps' });
    expect(retainsData(normalizeSpec(ts.spec))).toBe(true);
    (ts.spec as any).database = { managed: { deletionPolicy: 'Delete' } };
    expect(cluster(ts).metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'TaskService', name: 'sys', controller: true })]);
    expect(retainsData(normalizeSpec(ts.spec))).toBe(false);
    // an external database is never the operator's to delete; its keys are kept with it
    expect(retainsData(normalizeSpec(bare().spec))).toBe(true);
  });

  it('generated keys: generated once; a recorded key that is lost or changed is reported, never regenerated, until the admin accepts that exact state (issue 59 #3)', () => {
    const keys = ['AUTH_SECRET', 'TOTP_ENCRYPTION_KEY'];
    const b64 = (v: string) => Buffer.from(v).toString('base64');
    // first reconcile: nothing recorded, nothing there
    const first = checkKeys(keys, {}, {});
    expect(decideKeys('sys-generated', first, {}, undefined, 'sys')).toMatchObject({ generate: keys, condition: { status: 'True' } });
    const data = { AUTH_SECRET: b64('a'.repeat(40)), TOTP_ENCRYPTION_KEY: b64('b'.repeat(64)) };
    const recorded = checkKeys(keys, data, {}).present;
    expect(Object.values(recorded).every((c) => /^[0-9a-f]{16}$/.test(c))).toBe(true);
    // the Secret is deleted: nothing generated, the condition says what and how to recover
    const lost = checkKeys(keys, {}, recorded);
    expect(lost).toMatchObject({ lost: keys, changed: [], toGenerate: [] });
    const d = decideKeys('sys-generated', lost, recorded, undefined, 'sys');
    expect(d.generate).toEqual([]);
    expect(d.record).toEqual(recorded);
    expect(d.condition).toMatchObject({ type: 'KeyMaterial', status: 'False', reason: 'KeysLost' });
    expect(d.condition.message).toContain(`kubectl annotate taskservice sys ${ACCEPT_KEYS_ANNOTATION}=${lost.fingerprint} --overwrite`);
    // a stale acceptance (another fingerprint) changes nothing; the named one regenerates the lost keys
    expect(decideKeys('sys-generated', lost, recorded, '000000000000', 'sys').generate).toEqual([]);
    expect(decideKeys('sys-generated', lost, recorded, lost.fingerprint, 'sys')).toMatchObject({ generate: keys, condition: { status: 'True', reason: 'KeysAccepted' } });
    // restored from a backup with the old values: intact again
    expect(decideKeys('sys-generated', checkKeys(keys, data, recorded), recorded, undefined, 'sys').condition.reason).toBe('KeysIntact');
    // a changed value is reported too; a key never recorded (newly needed) is still generated
    const changed = checkKeys([...keys, 'CRON_SECRET'], { ...data, AUTH_SECRET: b64('c'.repeat(40)) }, recorded);
    expect(changed).toMatchObject({ lost: [], changed: ['AUTH_SECRET'], toGenerate: ['CRON_SECRET'] });
    expect(decideKeys('sys-generated', changed, recorded, undefined, 'sys')).toMatchObject({ generate: ['CRON_SECRET'], record: recorded, condition: { reason: 'KeysChanged' } });
  });

  it('a PodDisruptionBudget per service: a node drain evicts one pod of a service at a time; policy/v1beta1 before Kubernetes 1.21', () => {
    const pdbs = plan(bare(), opts).objects.filter((o) => o.kind === 'PodDisruptionBudget') as any[];
    expect(pdbs.map((p) => p.metadata.name)).toEqual(['sys-gateway', 'sys-auth', 'sys-tasks', 'sys-notifier', 'sys-webhook', 'sys-scheduler']);
    const gw = find(bare(), 'Deployment', 'sys-gateway');
    expect(pdbs[0]).toMatchObject({ apiVersion: 'policy/v1', spec: { maxUnavailable: 1, selector: gw.spec.selector } });
    for (const p of pdbs) expect(validateObject(p), p.metadata.name).toEqual([]);
    expect(plan(bare(), { ...opts, pdbApiVersion: 'policy/v1beta1' }).objects.find((o) => o.kind === 'PodDisruptionBudget')?.apiVersion).toBe('policy/v1beta1');
  });

  it('per-service resources (issue 59 #12): spec.serviceResources as given for its service, spec.resources as request = limit for the rest, else each service its own requests below 512Mi/500m', () => {
    const res = (ts: TaskService, svc: string) => find(ts, 'Deployment', `sys-${svc}`).spec.template.spec.containers[0].resources;
    // nothing set: the sizing bench's requests, the spec's example resources as the limits (Burstable)
    const defaults = bare();
    const requests = new Set<string>();
    for (const svc of SERVICES) {
      const r = res(defaults, svc);
      expect(r.limits, svc).toEqual({ memory: '512Mi', cpu: '500m' });
      expect(bytes(r.requests.memory), svc).toBeLessThan(bytes(r.limits.memory));
      expect(cores(r.requests.cpu), svc).toBeLessThan(cores(r.limits.cpu));
      // covers what the service was measured to hold at its peak
      expect(bytes(r.requests.memory), svc).toBeGreaterThan(MEASURED.services[svc].rssPeakMb * 1000 * 1024);
      requests.add(JSON.stringify(r.requests));
    }
    // per service, not one pair: tasks (the largest peak) asks for more memory than auth
    expect(requests.size).toBeGreaterThan(1);
    expect(bytes(res(defaults, 'tasks').requests.memory)).toBeGreaterThan(bytes(res(defaults, 'auth').requests.memory));

    const ts = bare();
    (ts.spec as any).serviceResources = { gateway: { requests: { cpu: '250m', memory: '256Mi' }, limits: { cpu: '2', memory: '768Mi' } } };
    expect(res(ts, 'gateway')).toEqual({ requests: { cpu: '250m', memory: '256Mi' }, limits: { cpu: '2', memory: '768Mi' } });
    expect(res(ts, 'tasks')).toEqual(res(defaults, 'tasks'));
    // spec.resources: one pair, request = limit, for every service serviceResources leaves out; an unset part is 512Mi/500m
    (ts.spec as any).resources = { memory: '384Mi' };
    expect(res(ts, 'gateway')).toEqual({ requests: { cpu: '250m', memory: '256Mi' }, limits: { cpu: '2', memory: '768Mi' } });
    for (const svc of SERVICES.filter((s) => s !== 'gateway')) expect(res(ts, svc), svc).toEqual({ requests: { memory: '384Mi', cpu: '500m' }, limits: { memory: '384Mi', cpu: '500m' } });
    for (const o of [...plan(ts, opts).objects, ...plan(defaults, opts).objects]) expect(validateObject(o as any), `${o.kind}/${o.metadata.name}`).toEqual([]);
  });

  it('leaves spec.replicas to the HPA of an autoscaled service', () => {
    const ts = bare();
    (ts.spec as any).autoscaled = ['gateway'];
    expect(find(ts, 'Deployment', 'sys-gateway').spec).not.toHaveProperty('replicas');
    expect(find(ts, 'Deployment', 'sys-tasks').spec.replicas).toBe(2);
  });
});
