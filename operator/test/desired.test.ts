/* eslint-disable @typescript-eslint/no-explicit-any -- tests read deep into untyped Kubernetes objects */
/**
 * L0: the pure desired-state builders. Every object passes Kubernetes schema validation, the output
 * matches reviewed golden files, and the spec's numbers (probes, resources, cron) are where they belong.
 */
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { serviceEnv } from '../../proto/src/service-env.ts';
import { deriveSubkeys, parseKeyRing, type RingKey } from '../../proto/src/ring-keys.ts';
import { customResourceDefinition, SERVICES } from '../src/crd.ts';
import { defaultRequests } from '../src/sizing.ts';
import {
  CONFIG_HASH_ANNOTATION,
  FIELD_MANAGER,
  SUBKEYS_CHECKSUM_ANNOTATION,
  subkeySecrets,
  desiredChildren,
  desiredState,
  needsFinalizer,
  InvalidTaskServiceError,
  type CronJobApiVersion,
} from '../src/desired.ts';
import type { KubeObject } from '../src/types.ts';
import { statefulSetImmutableChange } from '../src/reconciler.ts';
import { cluster, full, minimal } from './fixtures.ts';
import { validateObject } from './validate.ts';

const here = dirname(fileURLToPath(import.meta.url));
const v1 = { cronJobApiVersion: 'batch/v1' as CronJobApiVersion, firewall: { cluster, webPassword: true } };
const find = (objs: KubeObject[], kind: string, name: string) => {
  const o = objs.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`${kind}/${name} not rendered`);
  return o as any;
};

describe('desired state (L0)', () => {
  it('renders a ConfigMap, a Deployment and a Service per service and the CronJob for a minimal spec', () => {
    const objs = desiredChildren(minimal(), v1);
    expect(objs.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual(
      [
        'ConfigMap/demo-config',
        'CronJob/demo-cron',
        ...SERVICES.flatMap((s) => [`Deployment/demo-${s}`, `Service/demo-${s}`, `PodDisruptionBudget/demo-${s}`]),
        // no NATS referenced: the operator runs one
        'Service/demo-nats',
        'StatefulSet/demo-nats',
      ].sort(),
    );
    // Same namespace as the owner: garbage collection through owner references, no finalizer.
    for (const o of objs) {
      expect(o.metadata.namespace).toBe('apps');
      expect(o.metadata.ownerReferences).toEqual([
        { apiVersion: 'tasks.example.io/v1alpha1', kind: 'TaskService', name: 'demo', uid: minimal().metadata.uid, controller: true, blockOwnerDeletion: true },
      ]);
    }
    expect(needsFinalizer(minimal())).toBe(false);
  });

  it.each([
    ['minimal', minimal()],
    ['full', full()],
  ])('every object of the %s fixture passes Kubernetes schema validation', (_n, ts) => {
    for (const cron of ['batch/v1', 'batch/v1beta1'] as const) {
      const problems = desiredChildren(ts, { ...v1, cronJobApiVersion: cron }).flatMap((o) => validateObject(o));
      expect(problems).toEqual([]);
    }
  });

  it('the validator is not a rubber stamp: it rejects a broken Deployment and a bad name', () => {
    const d = structuredClone(find(desiredChildren(minimal(), v1), 'Deployment', 'demo-gateway'));
    d.spec.replicas = 'many';
    expect(validateObject(d).join()).toMatch(/replicas/);
    const s = structuredClone(find(desiredChildren(minimal(), v1), 'Service', 'demo-auth'));
    s.metadata.name = 'Demo_Auth';
    expect(validateObject(s).join()).toMatch(/DNS/);
  });

  it.each([
    ['minimal', minimal(), 'batch/v1'],
    ['full', full(), 'batch/v1'],
    ['minimal-v1beta1', minimal(), 'batch/v1beta1'],
  ] as const)('matches the golden file %s (UPDATE_GOLDEN=1 rewrites it)', (name, ts, cron) => {
    const text = desiredChildren(ts, { ...v1, cronJobApiVersion: cron })
      .map((o) => stringify(o, { lineWidth: 0 }))
      .join('---\n');
    const file = join(here, 'golden', `${name}.yaml`);
    if (process.env.UPDATE_GOLDEN === '1') writeFileSync(file, text);
    expect(existsSync(file), `${file} missing: run with UPDATE_GOLDEN=1 and review it`).toBe(true);
    expect(text).toBe(readFileSync(file, 'utf8'));
  });

  it('gateway: port 3000, probes that never depend on the database, its own requests below 512Mi/500m limits by default; 2 replicas of every service', () => {
    const objs = desiredChildren(minimal(), v1);
    const gw = find(objs, 'Deployment', 'demo-gateway');
    const c = gw.spec.template.spec.containers[0];
    expect(c.image).toBe('ghcr.io/task-service/task-service-gateway:latest');
    expect(c.ports).toEqual([
      { name: 'http', containerPort: 3000, protocol: 'TCP' },
      { name: 'metrics', containerPort: 9464, protocol: 'TCP' },
      { name: 'health', containerPort: 8080, protocol: 'TCP' },
    ]);
    // liveness on the health listener, up before the database is reached; readiness once it listens
    expect(c.env).toContainEqual({ name: 'HEALTH_PORT', value: '8080' });
    expect(c.livenessProbe).toMatchObject({ httpGet: { path: '/livez', port: 'health' } });
    expect(c.readinessProbe).toMatchObject({ httpGet: { path: '/readyz', port: 'http' } });
    // rollouts: keep answering until kube-proxy has dropped the endpoint, within the grace period
    expect(c.env).toContainEqual({ name: 'SHUTDOWN_DELAY_SECONDS', value: '5' });
    expect(gw.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(5 + 10);
    // bus-only services: probes on their health listener, so a rollout waits until the new pod subscribed
    const tasks = find(objs, 'Deployment', 'demo-tasks').spec.template.spec.containers[0];
    expect(tasks.env).not.toContainEqual(expect.objectContaining({ name: 'SHUTDOWN_DELAY_SECONDS' }));
    expect(tasks.env).toContainEqual({ name: 'HEALTH_PORT', value: '8080' });
    expect(tasks.ports).toEqual([{ name: 'health', containerPort: 8080, protocol: 'TCP' }]);
    expect(tasks.readinessProbe).toMatchObject({ httpGet: { path: '/health', port: 'health' } });
    // liveness does not depend on NATS: an outage makes pods unready, it does not restart them all
    expect(tasks.livenessProbe).toMatchObject({ httpGet: { path: '/livez', port: 'health' } });
    // the spec's example resources are the limits; the requests are the gateway's from the sizing bench (system.test.ts: every service)
    expect(c.resources).toEqual({ requests: defaultRequests('gateway'), limits: { memory: '512Mi', cpu: '500m' } });
    expect(gw.spec.template.spec.securityContext).toMatchObject({ runAsUser: 1001, runAsNonRoot: true });
    for (const s of SERVICES) expect(find(objs, 'Deployment', `demo-${s}`).spec.replicas).toBe(2);
    expect(find(objs, 'Service', 'demo-gateway').spec.ports).toEqual([
      { name: 'http', port: 3000, targetPort: 'http', protocol: 'TCP' },
      { name: 'metrics', port: 9464, targetPort: 'metrics', protocol: 'TCP' },
    ]);
    expect(find(objs, 'Service', 'demo-tasks').spec.clusterIP).toBe('None');
  });

  it('metrics: every Service names a `metrics` port (the gateway its METRICS_PORT, bus-only services their health port); the Ingress only reaches 3000', () => {
    const objs = desiredChildren(full(), v1);
    const gw = find(objs, 'Deployment', 'prod-gateway').spec.template.spec.containers[0];
    expect(gw.env).toContainEqual({ name: 'METRICS_PORT', value: '9464' });
    for (const s of SERVICES.filter((x) => x !== 'gateway')) {
      expect(find(objs, 'Service', `prod-${s}`).spec.ports, s).toEqual([{ name: 'metrics', port: 8080, targetPort: 'health', protocol: 'TCP' }]);
      expect(find(objs, 'Deployment', `prod-${s}`).spec.template.spec.containers[0].env, s).not.toContainEqual(expect.objectContaining({ name: 'METRICS_PORT' }));
    }
    const ingress = objs.find((o) => o.kind === 'Ingress') as { spec: { rules: { http: { paths: { backend: { service: { port: { number: number } } } }[] } }[] } } | undefined;
    for (const rule of ingress?.spec.rules ?? []) for (const p of rule.http.paths) expect(p.backend.service.port.number).toBe(3000);
  });

  it('the Ingress sends /.well-known/caldav and /dav to the gateway (CalDAV clients discover the server there, RFC 6764)', () => {
    const ts = full();
    ts.spec.ingress = { host: 'tasks.example.com' };
    const objs = desiredChildren(ts, v1);
    const ingress = objs.find((o) => o.kind === 'Ingress') as unknown as { spec: { rules: { http: { paths: { path: string; pathType: string; backend: { service: { name: string } } }[] } }[] } };
    const routed = (url: string) =>
      ingress.spec.rules.flatMap((r) => r.http.paths).find((p) => (p.pathType === 'Prefix' ? url === p.path || url.startsWith(p.path.endsWith('/') ? p.path : `${p.path}/`) : url === p.path));
    for (const url of ['/.well-known/caldav', '/dav/', '/dav/calendars/x/tasks/y.ics']) expect(routed(url)?.backend.service.name, url).toBe('prod-gateway');
  });

  it('secrets come from Secret references, one key each, non-secret config from the ConfigMap', () => {
    const objs = desiredChildren(full(), v1);
    const c = find(objs, 'Deployment', 'prod-auth').spec.template.spec.containers[0];
    const optional = (name: string, secret: string) => ({ name, valueFrom: { secretKeyRef: { name: secret, key: name, optional: true } } });
    expect(c.env).toEqual([
      { name: 'DATABASE_URL', valueFrom: { secretKeyRef: { name: 'task-service-secrets', key: 'DATABASE_URL' } } },
      { name: 'AUTH_SECRET', valueFrom: { secretKeyRef: { name: 'task-service-secrets', key: 'AUTH_SECRET' } } },
      { name: 'TOTP_ENCRYPTION_KEY', valueFrom: { secretKeyRef: { name: 'task-service-secrets', key: 'TOTP_ENCRYPTION_KEY' } } },
      ...['CODEHOST', 'CHAT', 'SEARCH', 'CONSUMER_ACCOUNT', 'OIDC'].flatMap((p) => [optional(`${p}_CLIENT_ID`, 'task-service-providers'), optional(`${p}_CLIENT_SECRET`, 'task-service-providers')]),
      optional('OIDC_ISSUER', 'task-service-providers'),
      ...['NATS_USER', 'NATS_PASSWORD', 'NATS_TOKEN', 'NATS_CREDS_FILE'].map((n) => optional(n, 'nats-creds')),
      { name: 'HEALTH_PORT', value: '8080' },
    ]);
    // never a whole Secret: envFrom would hand every key of it to every service
    expect(c.envFrom).toEqual([{ configMapRef: { name: 'prod-config' } }]);
    const cm = find(objs, 'ConfigMap', 'prod-config');
    expect(cm.data).toMatchObject({
      PUBLIC_APP_URL: 'https://tasks.example.com',
      AUTH_TRUST_HOST: 'true',
      NATS_URL: 'nats://nats.messaging:4222',
      REQUIRE_2FA: 'true',
    });
    expect(JSON.stringify(cm.data)).not.toMatch(/DATABASE_URL|AUTH_SECRET/);
  });

  it('each Deployment gets only the Secret keys its service declares (proto/src/service-env.ts): the gateway no TOTP_ENCRYPTION_KEY, the auth service it', () => {
    const objs = desiredChildren(full(), v1);
    const secretEnv = (svc: string) =>
      Object.fromEntries(
        find(objs, 'Deployment', `prod-${svc}`)
          .spec.template.spec.containers[0].env.filter((e: any) => e.valueFrom?.secretKeyRef)
          .map((e: any) => [e.name, e.valueFrom.secretKeyRef.name]),
      );
    const names = (svc: string) => Object.keys(secretEnv(svc)).sort();
    expect(secretEnv('auth')).toHaveProperty('TOTP_ENCRYPTION_KEY', 'task-service-secrets');
    expect(secretEnv('auth')).toHaveProperty('AUTH_SECRET');
    expect(names('gateway')).toEqual(['CRON_SECRET', 'DATABASE_URL', 'NATS_CREDS_FILE', 'NATS_PASSWORD', 'NATS_TOKEN', 'NATS_USER']);
    expect(names('tasks')).toEqual(['AUTH_SECRET', 'DATABASE_URL', 'NATS_CREDS_FILE', 'NATS_PASSWORD', 'NATS_TOKEN', 'NATS_USER']);
    expect(names('scheduler')).toEqual(['DATABASE_URL', 'NATS_CREDS_FILE', 'NATS_PASSWORD', 'NATS_TOKEN', 'NATS_USER']);
    // the ring services: their own derived ring (never the master), TOTP's key only to open values sealed before the ring (until re-sealed), never AUTH_SECRET
    for (const svc of ['webhook', 'notifier']) {
      expect(secretEnv(svc), svc).toHaveProperty('SECRETS_SUBKEYS', `prod-${svc}-keys`);
      expect(secretEnv(svc), svc).not.toHaveProperty('SECRETS_KEYRING');
      expect(secretEnv(svc), svc).toHaveProperty('TOTP_ENCRYPTION_KEY');
      expect(secretEnv(svc), svc).not.toHaveProperty('AUTH_SECRET');
    }
    // the admin's Secrets, key by key: provider credentials to auth, SMTP and VAPID to the notifier
    for (const svc of SERVICES) {
      const env = secretEnv(svc);
      expect(Object.entries(env).filter(([, secret]) => secret === 'task-service-providers').length, svc).toBe(svc === 'auth' ? 11 : 0);
      expect(Object.entries(env).filter(([, secret]) => secret === 'task-service-smtp' || secret === 'task-service-vapid').length, svc).toBe(svc === 'notifier' ? 9 : 0);
      expect(find(objs, 'Deployment', `prod-${svc}`).spec.template.spec.containers[0].envFrom, svc).toEqual([{ configMapRef: { name: 'prod-config' } }]);
    }
    // and every secret variable a Deployment gets is one its service reads
    for (const svc of SERVICES) for (const name of names(svc)) expect(serviceEnv(svc).has(name), `${svc} ${name}`).toBe(true);
    // once no value sealed before the ring remains (tools/keys.ts status), the admin takes TOTP's key from the ring services
    const resealed = full();
    (resealed.spec as any).secrets.preRingValues = false;
    const after = desiredChildren(resealed, v1);
    const totpHolders = SERVICES.filter((svc) => find(after, 'Deployment', `prod-${svc}`).spec.template.spec.containers[0].env.some((e: any) => e.name === 'TOTP_ENCRYPTION_KEY'));
    expect(totpHolders).toEqual(['auth']);
  });

  it("derives each ring service's Secret from the master ring: only its own subkeys, the same the service would derive; a rotation changes its checksum and rolls only the two ring Deployments", () => {
    const ts = minimal();
    const K1 = `k1:${'11'.repeat(32)}`;
    const K2 = `k2:${'22'.repeat(32)}`;
    const before = subkeySecrets(ts, K1);
    if (typeof before === 'string') throw new Error(before);
    expect(before.objects.map((o) => o.metadata.name)).toEqual(['demo-webhook-keys', 'demo-notifier-keys']);
    for (const o of before.objects) {
      validateObject(o);
      expect(o.metadata.ownerReferences).toHaveLength(1);
      expect(o.metadata.labels!['app.kubernetes.io/managed-by']).toBe('taskservice-operator');
      expect(Object.keys(o.data as object)).toEqual(['SECRETS_SUBKEYS']);
    }
    const value = (o: KubeObject) => Buffer.from((o.data as Record<string, string>).SECRETS_SUBKEYS!, 'base64').toString();
    const [webhook, notifier] = before.objects.map(value) as [string, string];
    // exactly what the runtime would derive from the master, and nothing of the other service's purposes
    expect(webhook).toBe(deriveSubkeys(parseKeyRing(K1) as RingKey[], 'webhook'));
    expect(notifier).toBe(deriveSubkeys(parseKeyRing(K1) as RingKey[], 'notifier'));
    expect(webhook).not.toMatch(/notifier\//);
    expect(notifier).not.toMatch(/webhook\//);
    expect(`${webhook},${notifier}`).not.toContain('11'.repeat(32));
    // a rotation (a new key first): both rings change, each Deployment's checksum with it, the others' templates not at all
    const after = subkeySecrets(ts, `${K2},${K1}`);
    if (typeof after === 'string') throw new Error(after);
    expect(value(after.objects[0]!).split(',').map((e) => e.split(':')[1])).toEqual(['k2', 'k1']);
    const deployments = (checksums: Record<string, string>) => desiredChildren(ts, { ...v1, subkeyChecksums: checksums }).filter((o) => o.kind === 'Deployment') as any[];
    const [d1, d2] = [deployments(before.checksums), deployments(after.checksums)];
    for (const [i, d] of d1.entries()) {
      const svc = d.metadata.name.replace('demo-', '');
      const ring = svc === 'webhook' || svc === 'notifier';
      expect(d.spec.template.metadata.annotations[SUBKEYS_CHECKSUM_ANNOTATION], svc).toBe(ring ? before.checksums[svc as 'webhook'] : undefined);
      expect(JSON.stringify(d2[i].spec.template) === JSON.stringify(d.spec.template), svc).toBe(!ring);
    }
    // a value the services would refuse is reported, nothing derived
    expect(subkeySecrets(ts, 'k1:abc')).toMatch(/64 hex/);
  });

  it('a config change changes the pod template (so the Deployments roll out)', () => {
    const a = find(desiredChildren(minimal(), v1), 'Deployment', 'demo-tasks');
    const changed = minimal();
    (changed.spec as any).config = { LOG_LEVEL: 'debug' };
    const b = find(desiredChildren(changed, v1), 'Deployment', 'demo-tasks');
    expect(b.spec.template.metadata.annotations[CONFIG_HASH_ANNOTATION]).not.toBe(a.spec.template.metadata.annotations[CONFIG_HASH_ANNOTATION]);
  });

  it('the CronJob POSTs /api/cron on the gateway every 5 minutes with the bearer token from the Secret', () => {
    for (const cron of ['batch/v1', 'batch/v1beta1'] as const) {
      const job = find(desiredChildren(minimal(), { ...v1, cronJobApiVersion: cron }), 'CronJob', 'demo-cron');
      expect(job.apiVersion).toBe(cron);
      expect(job.spec.schedule).toBe('*/5 * * * *');
      const c = job.spec.jobTemplate.spec.template.spec.containers[0];
      expect(c.env).toContainEqual({ name: 'CRON_URL', value: 'http://demo-gateway.apps.svc:3000/api/cron' });
      expect(c.env).toContainEqual({ name: 'CRON_SECRET', valueFrom: { secretKeyRef: { name: 'task-service-secrets', key: 'CRON_SECRET' } } });
      expect(c.command.join(' ')).toMatch(/method: 'POST'.*authorization: 'Bearer ' \+ process\.env\.CRON_SECRET/);
    }
  });

  it('the firewall DaemonSet is privileged on the host network, configured from the CR, and cleaned by a finalizer across namespaces', () => {
    const ts = full();
    const objs = desiredChildren(ts, v1);
    const ds = find(objs, 'DaemonSet', 'prod-firewall');
    expect(ds.metadata.namespace).toBe('kube-system');
    expect(ds.metadata.ownerReferences).toBeUndefined();
    expect(ds.metadata.labels).toMatchObject({ 'tasks.example.io/owner-name': 'prod', 'tasks.example.io/owner-namespace': 'apps' });
    expect(ds.spec.template.spec.hostNetwork).toBe(true);
    const core = ds.spec.template.spec.containers.find((c: any) => c.name === 'core');
    expect(core.securityContext.privileged).toBe(true);
    expect(core.command).toEqual(['node', 'services/firewall/src/cli.ts', 'core', '--config', '/etc/task-firewall/config.json']);
    const cm = find(objs, 'ConfigMap', 'prod-firewall');
    const config = JSON.parse(cm.data['config.json']);
    // CRD defaults filled in, the CR's own values kept.
    expect(config.acceptance).toEqual({ enabled: true, duration: 300 });
    expect(config.firewall.ssh_brute_force_connection_limit).toBe(10);
    expect(config.firewall.syn_flood_limit).toBe(100);
    expect(config.ipv6).toEqual({ enabled: true, icmp_allow_router_advertisement: true, icmp_allow_neighbor_advertisement: true });
    expect(needsFinalizer(ts)).toBe(true);
    ts.spec.firewall.namespace = undefined;
    expect(needsFinalizer(ts)).toBe(false);
    expect(find(desiredChildren(ts, v1), 'DaemonSet', 'prod-firewall').metadata.namespace).toBe('apps');
  });

  it('a set of TaskServices: one set of children each, none for one being deleted', () => {
    const deleting = minimal('old');
    deleting.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
    const all = desiredState([minimal('a'), full('b', 'other'), deleting], v1);
    const names = new Set(all.map((o) => `${o.metadata.namespace}/${o.kind}/${o.metadata.name}`));
    expect(names.size).toBe(all.length);
    expect(all.filter((o) => o.metadata.name.startsWith('old-'))).toEqual([]);
    expect(all.filter((o) => o.kind === 'Deployment')).toHaveLength(12);
  });

  it('spec.nats.replicas 3: a JetStream cluster — 3 servers routed over a headless Service, config from a ConfigMap, a PodDisruptionBudget, streams kept on 3', () => {
    const ts = minimal();
    (ts.spec as any).nats = { replicas: 3 };
    const objs = desiredChildren(ts, v1);
    expect(objs.flatMap((o) => validateObject(o))).toEqual([]);
    const sts = find(objs, 'StatefulSet', 'demo-nats');
    expect(sts.spec.replicas).toBe(3);
    expect(sts.spec.serviceName).toBe('demo-nats-routes');
    const routes = find(objs, 'Service', 'demo-nats-routes');
    expect(routes.spec).toMatchObject({ clusterIP: 'None', publishNotReadyAddresses: true, selector: sts.spec.selector.matchLabels });
    expect(routes.spec.ports).toEqual([{ name: 'cluster', port: 6222, targetPort: 'cluster', protocol: 'TCP' }]);
    // clients keep the one ClusterIP Service
    expect(find(objs, 'Service', 'demo-nats').spec.ports.map((p: any) => p.port)).toEqual([4222]);
    expect(find(objs, 'PodDisruptionBudget', 'demo-nats').spec).toEqual({ maxUnavailable: 1, selector: { matchLabels: sts.spec.selector.matchLabels } });

    const conf: string = find(objs, 'ConfigMap', 'demo-nats').data['nats.conf'];
    expect(conf).toContain('jetstream { store_dir: "/data" }');
    expect(conf).toMatch(/cluster \{\n {2}name: "demo-nats"\n {2}port: 6222\n {2}authorization \{ user: \$NATS_USER, password: \$NATS_PASSWORD_QUOTED \}\n {2}routes: \[\$NATS_ROUTE_0, \$NATS_ROUTE_1, \$NATS_ROUTE_2\]/);
    expect(conf).toContain('authorization { user: $NATS_USER, password: $NATS_PASSWORD_QUOTED }');
    const c = sts.spec.template.spec.containers[0];
    expect(c.args).toEqual(['--config=/etc/nats/nats.conf']);
    const env = Object.fromEntries(c.env.map((e: any) => [e.name, e.value ?? e.valueFrom]));
    // credentials before the routes: Kubernetes expands $(VAR) only from variables defined earlier
    expect(c.env.map((e: any) => e.name)).toEqual(['NATS_USER', 'NATS_PASSWORD', 'NATS_PASSWORD_QUOTED', 'NATS_SERVER_NAME', 'NATS_ROUTE_0', 'NATS_ROUTE_1', 'NATS_ROUTE_2']);
    // the configuration parser reads an unquoted value such as 12-… as a date
    expect(env.NATS_PASSWORD_QUOTED).toBe('"$(NATS_PASSWORD)"');
    expect(env.NATS_ROUTE_1).toBe('nats://$(NATS_USER):$(NATS_PASSWORD)@demo-nats-1.demo-nats-routes.apps.svc:6222');
    expect(env.NATS_SERVER_NAME).toEqual({ fieldRef: { fieldPath: 'metadata.name' } });
    expect(c.volumeMounts).toContainEqual({ name: 'config', mountPath: '/etc/nats', readOnly: true });
    expect(sts.spec.template.spec.volumes).toEqual([{ name: 'config', configMap: { name: 'demo-nats' } }]);
    // a config change restarts the servers; spec.version still does not
    const upgraded = structuredClone(ts);
    upgraded.spec.version = '9.9.9';
    expect(find(desiredChildren(upgraded, v1), 'StatefulSet', 'demo-nats').spec.template).toEqual(sts.spec.template);
    expect(sts.spec.template.metadata.annotations[CONFIG_HASH_ANNOTATION]).toMatch(/^[0-9a-f]{16}$/);

    expect(find(objs, 'ConfigMap', 'demo-config').data.NATS_STREAM_REPLICAS).toBe('3');
    expect(find(desiredChildren(ts, { ...v1, pdbApiVersion: 'policy/v1beta1' }), 'PodDisruptionBudget', 'demo-nats').apiVersion).toBe('policy/v1beta1');
  });

  it('spec.nats.replicas 1 → 3 changes what a StatefulSet cannot change in place (serviceName): the reconciler recreates it, pods and volumes kept (issue 59 #3)', () => {
    const one = find(desiredChildren(minimal(), v1), 'StatefulSet', 'demo-nats');
    const ts = minimal();
    (ts.spec as any).nats = { replicas: 3 };
    const three = find(desiredChildren(ts, v1), 'StatefulSet', 'demo-nats');
    expect(statefulSetImmutableChange(one, three)).toBe('serviceName demo-nats → demo-nats-routes');
    expect(statefulSetImmutableChange(three, one)).toBe('serviceName demo-nats-routes → demo-nats');
    // what it can change in place (replicas, the pod template) is applied as before
    expect(statefulSetImmutableChange(one, { ...one, spec: { ...one.spec, replicas: 2 } })).toBeUndefined();
    // the live object as the API server returns it (map keys sorted) is the same selector, not a change
    // (the one-node cluster on the defaults saw NATS's StatefulSet recreated at every reconcile)
    const sorted = (m: Record<string, string>) => Object.fromEntries(Object.entries(m).sort(([a], [b]) => a.localeCompare(b)));
    const live = { ...one, spec: { ...one.spec, selector: { matchLabels: sorted(one.spec.selector.matchLabels) } } };
    expect(JSON.stringify(live.spec.selector)).not.toBe(JSON.stringify(one.spec.selector));
    expect(statefulSetImmutableChange(live, one)).toBeUndefined();
    expect(statefulSetImmutableChange({ ...three, spec: { ...three.spec, selector: { matchLabels: sorted(three.spec.selector.matchLabels) } } }, three)).toBeUndefined();
    // the claims keep their name, so the pods claim the same PVCs (data-demo-nats-0) again
    expect(three.spec.volumeClaimTemplates.map((v: any) => v.metadata.name)).toEqual(one.spec.volumeClaimTemplates.map((v: any) => v.metadata.name));
  });

  it('spec.nats.replicas 1 (default): one server from flags, nothing of the cluster, streams left at 1; an existing NATS gets no NATS_STREAM_REPLICAS', () => {
    const objs = desiredChildren(minimal(), v1);
    const sts = find(objs, 'StatefulSet', 'demo-nats');
    expect(sts.spec.replicas).toBe(1);
    expect(sts.spec.serviceName).toBe('demo-nats');
    expect(sts.spec.template.spec.containers[0].args).toContain('--jetstream');
    expect(objs.filter((o) => o.metadata.name.startsWith('demo-nats-') || (o.kind !== 'Service' && o.kind !== 'StatefulSet' && o.metadata.name === 'demo-nats'))).toEqual([]);
    expect(find(objs, 'ConfigMap', 'demo-config').data.NATS_STREAM_REPLICAS).toBeUndefined();
    const external = full();
    (external.spec.nats as any).replicas = 3;
    expect(find(desiredChildren(external, v1), 'ConfigMap', 'prod-config').data.NATS_STREAM_REPLICAS).toBeUndefined();
  });

  it('rejects a name whose child names would break Kubernetes limits', () => {
    expect(() => desiredChildren(minimal('x'.repeat(43)), v1)).toThrow(InvalidTaskServiceError);
    expect(FIELD_MANAGER).toBe('taskservice-operator');
  });
});

describe('TaskService CRD schema', () => {
  const crd = customResourceDefinition() as any;
  const schema = crd.spec.versions[0].schema.openAPIV3Schema;
  const ajv = new Ajv({ strict: false, useDefaults: true, validateFormats: false, allErrors: true });
  const validate = ajv.compile(schema);

  it('is valid as a CustomResourceDefinition and structural (every node typed)', () => {
    expect(validateObject(crd)).toEqual([]);
    const untyped: string[] = [];
    const walk = (s: any, path: string) => {
      if (!s.type) untyped.push(path);
      for (const [k, sub] of Object.entries(s.properties ?? {})) walk(sub, `${path}.${k}`);
      if (s.items) walk(s.items, `${path}[]`);
      if (typeof s.additionalProperties === 'object') walk(s.additionalProperties, `${path}{}`);
    };
    walk(schema, '');
    expect(untyped).toEqual([]);
    expect(crd.spec.versions[0].subresources).toEqual({
      status: {},
      scale: { specReplicasPath: '.spec.replicas.gateway', statusReplicasPath: '.status.gatewayReplicas', labelSelectorPath: '.status.gatewaySelector' },
    });
    expect(crd.spec.scope).toBe('Namespaced');
  });

  it('accepts the fixtures and fills in the defaults the spec names', () => {
    const obj: any = structuredClone(minimal());
    expect(validate(obj)).toBe(true);
    // no default pair: unset, each service gets its own requests (a default here would make them one)
    expect(obj.spec).not.toHaveProperty('resources');
    expect(obj.spec.replicas.gateway).toBe(2);
    expect(obj.spec.cron.schedule).toBe('*/5 * * * *');
    expect(obj.spec.firewall.enabled).toBe(false);
    expect(validate(structuredClone(full()))).toBe(true);
  });

  it.each([
    ['negative replicas', (s: any) => (s.replicas = { gateway: -1 })],
    ['acceptance.duration below 10', (s: any) => (s.firewall = { config: { acceptance: { duration: 5 } } })],
    ['ssh limit above 100', (s: any) => (s.firewall = { config: { firewall: { ssh_brute_force_connection_limit: 101 } } })],
    ['a CIDR without prefix', (s: any) => (s.firewall = { config: { container: { custom_networks: ['10.0.0.0'] } } })],
    ['a relative public URL', (s: any) => (s.publicUrl = '/tasks')],
    ['a cron schedule that is not five fields', (s: any) => (s.cron = { schedule: 'every five minutes' })],
    ['an ingress host with a scheme', (s: any) => (s.ingress = { host: 'https://tasks.example.com' })],
    ['a bad memory quantity', (s: any) => (s.resources = { memory: 'lots' })],
    ['a storage size that is not a quantity', (s: any) => (s.nats = { storage: '2 gigs' })],
    ['2 NATS servers (no majority survives the loss of one)', (s: any) => (s.nats = { replicas: 2 })],
    ['a per-service CPU limit that is not a quantity', (s: any) => (s.serviceResources = { gateway: { limits: { cpu: 'two cores' } } })],
    ['a deletion policy other than Retain or Delete', (s: any) => (s.database = { managed: { deletionPolicy: 'Orphan' } })],
  ])('rejects %s', (_n, mutate) => {
    const obj: any = structuredClone(minimal());
    obj.spec.secrets = structuredClone(obj.spec.secrets);
    mutate(obj.spec);
    expect(validate(obj)).toBe(false);
  });
});
