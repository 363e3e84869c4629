/* eslint-disable @typescript-eslint/no-explicit-any -- tests read deep into untyped Kubernetes objects */
/**
 * L4: the Helm chart with the real helm binary (ensure-helm.sh): `helm lint --strict`, `helm template`
 * output through the L0 validator, and the rendered manifests applied with a server-side dry run to a
 * real kube-apiserver 1.20.2 (tools/k8s/cluster.ts), which checks what lint cannot.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { API_VERSION, customResourceDefinition, KIND, SERVICES } from '../../operator/src/crd.ts';
import { desiredChildren } from '../../operator/src/desired.ts';
import { DEFAULT_REPLICAS, defaultRequests, POD_LIMITS, sizingTable } from '../../operator/src/sizing.ts';
import { validateObject } from '../../operator/test/validate.ts';
import { apiServerBinaries, helmBinaries, requireBinaries } from './bins.ts';
import { startTestCluster, type TestCluster } from './cluster.ts';
import { CHART_DIR, CRD_FILE, renderCrdYaml } from './gen-crd.ts';

const helmGate = requireBinaries(helmBinaries(), 'tools/k8s/ensure-helm.sh');
const apiGate = helmGate.run ? requireBinaries(apiServerBinaries(), 'tools/k8s/ensure-apiserver.sh') : helmGate;
const bin = helmBinaries().found as { helm: string; kubectl: string };

const helm = (...args: string[]) => spawnSync(bin.helm, args, { encoding: 'utf8' });
const render = (...args: string[]): any[] => {
  const r = helm('template', 'tso', CHART_DIR, '--namespace', 'operators', ...args);
  if (r.status !== 0) throw new Error(r.stderr);
  return parseAllDocuments(r.stdout)
    .map((d) => d.toJSON())
    .filter(Boolean);
};
const CREATE_TS = ['--set', 'taskService.create=true'];
const REPO = join(CHART_DIR, '..', '..');

describe('chart files', () => {
  it('crds/ holds exactly the CRD operator/src/crd.ts defines (run node tools/k8s/gen-crd.ts after changing it)', () => {
    expect(readFileSync(CRD_FILE, 'utf8')).toBe(renderCrdYaml());
  });
});

describe.skipIf(!helmGate.run)('helm chart (L4)', () => {
  it.each([
    ['default values', []],
    ['with a TaskService', CREATE_TS],
    ['the k3d values', ['-f', join(CHART_DIR, 'ci', 'k3d-values.yaml')]],
  ])('helm lint --strict is clean with %s', (_n, extra) => {
    const r = helm('lint', '--strict', CHART_DIR, ...(extra));
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/0 chart\(s\) failed/);
  });

  it('values.schema.json rejects bad values (lint fails)', () => {
    expect(helm('lint', '--strict', CHART_DIR, '--set', 'replicaCount=many').status).not.toBe(0);
    expect(helm('lint', '--strict', CHART_DIR, '--set', 'image.pullPolicy=Sometimes').status).not.toBe(0);
  });

  it('renders the operator, its least-privilege RBAC and (optionally) a TaskService; every object passes schema validation', () => {
    const objs = render('--no-hooks', ...CREATE_TS);
    expect(objs.map((o) => o.kind).sort()).toEqual(['ClusterRole', 'ClusterRoleBinding', 'Deployment', 'Role', 'RoleBinding', 'ServiceAccount', 'TaskService'].sort());
    for (const o of objs.filter((x) => x.kind !== 'TaskService')) expect(validateObject(o)).toEqual([]);
    // the TaskService against the CRD's own schema
    const ajv = new Ajv({ strict: false, validateFormats: false });
    const validate = ajv.compile((customResourceDefinition() as any).spec.versions[0].schema.openAPIV3Schema);
    const ts = objs.find((o) => o.kind === 'TaskService');
    expect(validate(ts), JSON.stringify(validate.errors)).toBe(true);

    const dep = objs.find((o) => o.kind === 'Deployment');
    const c = dep.spec.template.spec.containers[0];
    expect(c.image).toBe('ghcr.io/task-service/task-service-operator:0.1.0');
    expect(c.env.find((e: any) => e.name === 'POD_NAMESPACE').valueFrom.fieldRef.fieldPath).toBe('metadata.namespace');
    expect(dep.spec.template.spec.securityContext.runAsUser).toBe(1001);
    expect(dep.spec.replicas).toBe(2);

    const cr = objs.find((o) => o.kind === 'ClusterRole');
    const verbs = (group: string, resource: string) => cr.rules.find((r: any) => r.apiGroups.includes(group) && r.resources.includes(resource))?.verbs ?? [];
    expect(verbs('tasks.example.io', 'taskservices/status')).toEqual(['get', 'patch']);
    expect(verbs('apps', 'deployments')).not.toContain('*');
    // Secrets: single reads and the generated Secret only; never list or watch (that would read them all).
    expect(verbs('', 'secrets')).toEqual(['get', 'create', 'patch']);
    const role = objs.find((o) => o.kind === 'Role');
    expect(role.metadata.namespace).toBe('operators');
    expect(role.rules).toEqual([{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] }]);
  });

  it("the chart's TaskService becomes Deployments that each get only their service's Secret keys: the gateway no TOTP_ENCRYPTION_KEY, auth it (issue 54)", () => {
    const ts = render('--no-hooks', ...CREATE_TS, '--set', 'taskService.spec.secrets.providers.name=idp', '--set', 'taskService.spec.secrets.smtp.name=mail').find((o) => o.kind === 'TaskService');
    // what the operator makes of it (the pure builder the reconciler applies)
    const objs = desiredChildren({ ...ts, metadata: { ...ts.metadata, uid: 'u1' } }, { cronJobApiVersion: 'batch/v1' });
    const container = (svc: string): any => (objs.find((o) => o.kind === 'Deployment' && o.metadata.name === `task-service-${svc}`) as any).spec.template.spec.containers[0];
    const secretKeys = (svc: string) => container(svc).env.filter((e: any) => e.valueFrom?.secretKeyRef).map((e: any) => `${e.valueFrom.secretKeyRef.name}/${e.valueFrom.secretKeyRef.key}`);
    expect(secretKeys('auth')).toContain('task-service-generated/TOTP_ENCRYPTION_KEY');
    expect(secretKeys('auth')).toContain('idp/OIDC_CLIENT_SECRET');
    expect(secretKeys('gateway').sort()).toEqual(['task-service-db-app/uri', 'task-service-generated/CRON_SECRET', 'task-service-generated/NATS_PASSWORD', 'task-service-generated/NATS_USER']);
    expect(secretKeys('notifier')).toContain('mail/SMTP_PASS');
    // the master ring reaches no Deployment: each ring service its own derived ring
    expect(secretKeys('notifier')).toContain('task-service-notifier-keys/SECRETS_SUBKEYS');
    expect(secretKeys('webhook')).toContain('task-service-webhook-keys/SECRETS_SUBKEYS');
    for (const svc of SERVICES) expect(secretKeys(svc), svc).not.toContain('task-service-generated/SECRETS_KEYRING');
    for (const svc of SERVICES) {
      if (svc !== 'auth') expect(secretKeys(svc).filter((k: string) => k.startsWith('idp/')), svc).toEqual([]);
      if (svc !== 'notifier') expect(secretKeys(svc).filter((k: string) => k.startsWith('mail/')), svc).toEqual([]);
      if (!['auth', 'webhook', 'notifier'].includes(svc)) expect(secretKeys(svc), svc).not.toContain('task-service-generated/TOTP_ENCRYPTION_KEY');
      // no whole Secret anywhere
      expect(container(svc).envFrom, svc).toEqual([{ configMapRef: { name: 'task-service-config' } }]);
    }
  });

  it('namespaced mode (watchNamespaces): a Role and RoleBinding per watched namespace, no ClusterRole, WATCH_NAMESPACES set (issue 59 #7)', () => {
    const objs = render('--no-hooks', '--set', 'watchNamespaces={team-a,team-b}');
    expect(objs.filter((o) => o.kind.startsWith('Cluster'))).toEqual([]);
    const roles = objs.filter((o) => o.kind === 'Role' && o.metadata.name === 'tso-task-service-operator');
    expect(roles.map((r) => r.metadata.namespace)).toEqual(['team-a', 'team-b']);
    const cluster = render('--no-hooks').find((o) => o.kind === 'ClusterRole');
    // the same rights on namespaced kinds as the cluster-wide mode, minus the firewall's reads (nodes,
    // endpoints, its pods and their probe Events)
    const firewallOnly = (r: any) => ['nodes', 'endpoints', 'pods'].some((k) => r.resources.includes(k)) || (r.resources.includes('events') && r.verbs.join() === 'list');
    expect(roles[0].rules).toEqual(cluster.rules.filter((r: any) => !firewallOnly(r)));
    const bindings = objs.filter((o) => o.kind === 'RoleBinding' && o.metadata.name === 'tso-task-service-operator');
    expect(bindings.map((b) => [b.metadata.namespace, b.subjects[0].namespace])).toEqual([
      ['team-a', 'operators'],
      ['team-b', 'operators'],
    ]);
    for (const o of objs) expect(validateObject(o)).toEqual([]);
    const env = objs.find((o) => o.kind === 'Deployment').spec.template.spec.containers[0].env;
    expect(env).toContainEqual({ name: 'WATCH_NAMESPACES', value: 'team-a,team-b' });
    expect(render('--no-hooks').find((o) => o.kind === 'Deployment').spec.template.spec.containers[0].env.map((e: any) => e.name)).not.toContain('WATCH_NAMESPACES');
    expect(helm('lint', '--strict', CHART_DIR, '--set', 'watchNamespaces={Not_A_Namespace}').status).not.toBe(0);
  });

  it('helm uninstall runs a pre-delete hook first: a Job in the operator image deletes every TaskService, with only that right', () => {
    const isHook = (o: any) => o.metadata.annotations?.['helm.sh/hook'] === 'pre-delete';
    const hooks = render().filter(isHook);
    expect(hooks.map((o) => o.kind).sort()).toEqual(['ClusterRole', 'ClusterRoleBinding', 'Job', 'ServiceAccount']);
    // (the L0 validator has no Job schema: the server-side dry run below checks the Job)
    for (const o of hooks.filter((x) => x.kind !== 'Job')) expect(validateObject(o)).toEqual([]);
    const job = hooks.find((o) => o.kind === 'Job');
    const c = job.spec.template.spec.containers[0];
    expect(c.image).toBe('ghcr.io/task-service/task-service-operator:0.1.0');
    expect(c.command).toEqual(['node', 'operator/src/uninstall.ts']);
    expect(c.env).toEqual([
      { name: 'UNINSTALL_TIMEOUT_SECONDS', value: '240' },
      // only the release's own TaskServices are deleted
      { name: 'RELEASE_NAME', value: 'tso' },
      { name: 'RELEASE_NAMESPACE', value: 'operators' },
    ]);
    expect(job.spec.template.spec.serviceAccountName).toBe('tso-task-service-operator-uninstall');
    expect(hooks.find((o) => o.kind === 'ClusterRole').rules).toEqual([{ apiGroups: ['tasks.example.io'], resources: ['taskservices'], verbs: ['list', 'delete'] }]);
    // the hook's account, role and binding exist before the Job runs
    for (const o of hooks.filter((x) => x.kind !== 'Job')) expect(Number(o.metadata.annotations['helm.sh/hook-weight'])).toBeLessThan(0);
    expect(render('--set', 'uninstallHook.enabled=false').filter(isHook)).toEqual([]);
  });

  it('metrics: ServiceMonitors only where the Prometheus operator is served (and not when turned off); the dashboard ConfigMap behind its switch', () => {
    const kinds = (...args: string[]) => render('--no-hooks', ...args).map((o) => o.kind);
    const withPrometheus = ['--api-versions', 'monitoring.coreos.com/v1'];
    expect(kinds()).not.toContain('ServiceMonitor');
    expect(kinds(...withPrometheus, '--set', 'metrics.serviceMonitor.enabled=false')).not.toContain('ServiceMonitor');

    const objs = render('--no-hooks', ...withPrometheus, '--set', 'metrics.serviceMonitor.labels.release=prom', '--set', 'metrics.serviceMonitor.namespaces={apps}');
    const monitors = objs.filter((o) => o.kind === 'ServiceMonitor');
    expect(monitors.map((m) => m.metadata.name).sort()).toEqual(['tso-task-service-operator', 'tso-task-service-operator-taskservices']);
    for (const m of monitors) {
      expect(m.metadata.labels.release).toBe('prom');
      expect(m.spec.endpoints).toEqual([{ port: 'metrics', path: '/metrics', interval: '30s' }]);
    }
    // the operator's replicas through a Service on their health port
    const svc = objs.find((o) => o.kind === 'Service' && o.metadata.name === 'tso-task-service-operator-metrics');
    expect(validateObject(svc)).toEqual([]);
    expect(svc.spec.ports).toEqual([{ name: 'metrics', port: 8081, targetPort: 'health', protocol: 'TCP' }]);
    const op = monitors.find((m) => m.metadata.name === 'tso-task-service-operator');
    for (const [k, v] of Object.entries(op.spec.selector.matchLabels)) expect(svc.metadata.labels[k]).toBe(v);
    // every TaskService's Services (operator/src/desired.ts labels them and names their `metrics` port)
    const apps = monitors.find((m) => m.metadata.name.endsWith('-taskservices'));
    expect(apps.spec.selector.matchLabels).toEqual({ 'app.kubernetes.io/name': 'task-service', 'app.kubernetes.io/managed-by': 'taskservice-operator' });
    expect(apps.spec.namespaceSelector).toEqual({ matchNames: ['apps'] });
    expect(render('--no-hooks', ...withPrometheus).find((o) => o.kind === 'ServiceMonitor' && o.metadata.name.endsWith('-taskservices')).spec.namespaceSelector).toEqual({ any: true });

    expect(kinds()).not.toContain('ConfigMap');
    const cm = render('--no-hooks', '--set', 'metrics.dashboard.enabled=true').find((o) => o.kind === 'ConfigMap');
    expect(validateObject(cm)).toEqual([]);
    expect(cm.metadata.labels.grafana_dashboard).toBe('1');
    const dashboard = JSON.parse(cm.data['task-service.json']);
    expect(dashboard.uid).toBe('task-service');
    const exprs = JSON.stringify(dashboard.panels.flatMap((p: any) => (p.targets ?? []).map((t: any) => t.expr)));
    for (const family of [
      'tasksvc_http_request_duration_seconds',
      'tasksvc_bus_handler_duration_seconds',
      'tasksvc_bus_events_published_total',
      'tasksvc_bus_events_consumed_total',
      'tasksvc_outbox_pending_events',
      'tasksvc_outbox_oldest_pending_age_seconds',
      'tasksvc_webhook_deliveries_total',
      'tasksvc_notifications_sent_total',
      'tasksvc_cron_job_duration_seconds',
      'tasksvc_pg_pool_connections',
      'nodejs_eventloop_lag_p99_seconds',
      'tasksvc_operator_reconciles_total',
    ])
      expect(exprs, family).toContain(family);
  });

  it("the services' default resources and replicas come from one place, operator/src/sizing.ts: the chart's CRD, the Deployments the operator makes of the chart's TaskService, and the sizing table in docs/kubernetes.md", () => {
    const crd = render('--include-crds').find((o) => o.kind === 'CustomResourceDefinition');
    const spec = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties;
    // no default pair in the CRD: the API server would store it and every pod would get it instead of its service's requests
    expect([spec.resources.default, spec.resources.properties.memory.default, spec.resources.properties.cpu.default]).toEqual([undefined, undefined, undefined]);
    for (const svc of SERVICES) expect(spec.replicas.properties[svc].default, svc).toBe(DEFAULT_REPLICAS);
    // the chart's TaskService as the API server stores it (the CRD's defaults filled in), then what the operator makes of it
    const ts = render('--no-hooks', ...CREATE_TS).find((o) => o.kind === 'TaskService');
    const withDefaults = new Ajv({ strict: false, useDefaults: true, validateFormats: false }).compile(crd.spec.versions[0].schema.openAPIV3Schema);
    expect(withDefaults(ts), JSON.stringify(withDefaults.errors)).toBe(true);
    const deployments = desiredChildren(ts, { cronJobApiVersion: 'batch/v1' }).filter((o: any) => o.kind === 'Deployment') as any[];
    expect(deployments).toHaveLength(SERVICES.length);
    for (const d of deployments) {
      const svc = d.metadata.name.slice(`${ts.metadata.name}-`.length);
      expect(d.spec.template.spec.containers[0].resources, d.metadata.name).toEqual({ requests: defaultRequests(svc), limits: POD_LIMITS });
      expect(d.spec.replicas, d.metadata.name).toBe(DEFAULT_REPLICAS);
    }
    // the docs' table is the module's, not a copy that could drift (node tools/k8s/gen-sizing.ts writes it)
    expect(readFileSync(join(CHART_DIR, '..', '..', 'docs', 'kubernetes.md'), 'utf8')).toContain(sizingTable());
  });

  it('helm template --include-crds ships the CRD', () => {
    const crds = render('--include-crds').filter((o) => o.kind === 'CustomResourceDefinition');
    expect(crds.map((c) => c.metadata.name)).toEqual(['taskservices.tasks.example.io']);
  });

  describe.skipIf(!apiGate.run)('against a real kube-apiserver', () => {
    let cluster: TestCluster;
    const kubectl = (args: string[], input?: string) =>
      spawnSync(bin.kubectl, ['--kubeconfig', cluster.kubeconfigPath, ...args], { encoding: 'utf8', input });

    beforeAll(async () => {
      cluster = await startTestCluster({ controllers: [] });
      // The CRD for real (helm installs crds/ first), then the namespaces the dry run targets.
      execFileSync(bin.kubectl, ['--kubeconfig', cluster.kubeconfigPath, 'apply', '--server-side', '-f', CRD_FILE]);
      execFileSync(bin.kubectl, ['--kubeconfig', cluster.kubeconfigPath, 'wait', '--for=condition=Established', 'crd/taskservices.tasks.example.io', '--timeout=60s']);
      execFileSync(bin.kubectl, ['--kubeconfig', cluster.kubeconfigPath, 'create', 'namespace', 'operators']);
    }, 180_000);
    afterAll(async () => cluster?.stop(), 60_000);

    it('helm template output applies with a server-side dry run (CRD, RBAC, Deployment, TaskService, the uninstall Job)', () => {
      const out = helm('template', 'tso', CHART_DIR, '--namespace', 'operators', '--include-crds', ...CREATE_TS).stdout;
      const r = kubectl(['apply', '--dry-run=server', '--server-side', '-f', '-'], out);
      expect(r.status, r.stderr).toBe(0);
      for (const kind of ['customresourcedefinition', 'clusterrole', 'role', 'deployment', 'taskservice', 'job.batch/tso-task-service-operator-uninstall']) expect(r.stdout.toLowerCase()).toContain(kind);
    });

    it('the server catches what helm lint does not: a TaskService outside the CRD bounds', () => {
      // values.schema.json checks only the TaskService's outline; the CRD checks the rest.
      const t = helm('template', 'tso', CHART_DIR, '--namespace', 'operators', ...CREATE_TS, '--set', 'taskService.spec.firewall.config.acceptance.duration=5');
      expect(t.status, t.stderr).toBe(0);
      const r = kubectl(['apply', '--dry-run=server', '-f', '-'], t.stdout);
      expect(r.status).not.toBe(0);
      expect(r.stderr).toMatch(/acceptance\.duration/);
    });

    it('the documented CRD upgrade: over a CRD Helm installed, a plain server-side apply conflicts; with --force-conflicts it updates it (issue 59 #9)', () => {
      // The previous chart's CRD as Helm leaves it: created with field manager "helm", one description
      // worded differently and without a field added since.
      const previous = structuredClone(customResourceDefinition()) as any; // (its schema objects are shared module constants)
      const props = previous.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties;
      props.database.description = 'PostgreSQL (previous chart)';
      delete props.database.properties.managed.properties.deletionPolicy;
      const crd = 'crd/taskservices.tasks.example.io';
      for (const args of [
        ['delete', crd, '--wait=true'],
        ['create', '--field-manager=helm', '-f', '-'],
        ['wait', '--for=condition=Established', crd, '--timeout=60s'],
      ]) {
        const r = kubectl(args, JSON.stringify(previous));
        expect(r.status, r.stderr).toBe(0);
      }
      const plain = kubectl(['apply', '--server-side', '-f', CRD_FILE]);
      expect(plain.status).not.toBe(0);
      expect(plain.stderr).toMatch(/conflict/i);
      // exactly as docs/kubernetes.md "Upgrading" says
      const forced = kubectl(['apply', '--server-side', '--force-conflicts', '-f', join(CHART_DIR, 'crds')]);
      expect(forced.status, forced.stderr).toBe(0);
      const stored = JSON.parse(kubectl(['get', crd, '-o', 'json']).stdout);
      const db = stored.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.database;
      expect(db.properties.managed.properties.deletionPolicy).toMatchObject({ default: 'Retain', enum: ['Retain', 'Delete'] });
      expect(db.description).toBe((customResourceDefinition() as any).spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.database.description);
    });

    it('from the CRD that defaulted spec.resources: a TaskService stored then keeps request = limit; the documented patch removes the pair for good and its pods get the per-service requests (issue 59 #12)', () => {
      const crd = 'crd/taskservices.tasks.example.io';
      const ns = ['-n', 'resources-upgrade'];
      // the CRD before the per-service requests: spec.resources defaulted to one pair
      const previous = structuredClone(customResourceDefinition()) as any;
      const resources = previous.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.resources;
      resources.default = {};
      resources.properties.memory.default = POD_LIMITS.memory;
      resources.properties.cpu.default = POD_LIMITS.cpu;
      const ts = { apiVersion: API_VERSION, kind: KIND, metadata: { name: 'old', namespace: 'resources-upgrade' }, spec: { publicUrl: 'https://tasks.example.com', database: { secretKeyRef: { name: 'pg-app' } } } };
      for (const [args, input] of [
        [['apply', '--server-side', '--force-conflicts', '-f', '-'], JSON.stringify(previous)],
        [['wait', '--for=condition=Established', crd, '--timeout=60s']],
        [['create', 'namespace', 'resources-upgrade']],
        [['create', '-f', '-'], JSON.stringify(ts)],
        // the new CRD, as docs/kubernetes.md "Upgrading" applies it
        [['apply', '--server-side', '--force-conflicts', '-f', join(CHART_DIR, 'crds')]],
      ] as [string[], string?][]) {
        const r = kubectl(args, input);
        expect(r.status, `${args.join(' ')}: ${r.stderr}`).toBe(0);
      }
      const get = () => JSON.parse(kubectl(['get', 'tsvc', 'old', ...ns, '-o', 'json']).stdout);
      const podResources = (obj: any) =>
        Object.fromEntries(
          desiredChildren(obj, { cronJobApiVersion: 'batch/v1' })
            .filter((o: any) => o.kind === 'Deployment')
            .map((d: any) => [d.metadata.name.slice('old-'.length), d.spec.template.spec.containers[0].resources]),
        );
      const pair = { memory: POD_LIMITS.memory, cpu: POD_LIMITS.cpu };
      expect(get().spec.resources).toEqual(pair);
      for (const [svc, r] of Object.entries(podResources(get()))) expect(r, svc).toEqual({ requests: pair, limits: pair });
      // exactly as docs/kubernetes.md "Sizing" says
      const patched = kubectl(['patch', 'tsvc', 'old', ...ns, '--type', 'json', '-p', '[{"op":"remove","path":"/spec/resources"}]']);
      expect(patched.status, patched.stderr).toBe(0);
      // an unrelated update later (the API server defaults on every write) does not bring the pair back
      expect(kubectl(['label', 'tsvc', 'old', ...ns, 'touched=yes']).status).toBe(0);
      expect(get().spec).not.toHaveProperty('resources');
      const after = podResources(get());
      expect(Object.keys(after).sort()).toEqual([...SERVICES].sort());
      for (const svc of SERVICES) expect(after[svc], svc).toEqual({ requests: defaultRequests(svc), limits: POD_LIMITS });
    });

    it('helm upgrade from the previous chart, after the documented CRD apply (issue 59 #9)', () => {
      // The previous chart: the last release tag's, else the chart before its CRD last changed.
      const git = (...args: string[]) => execFileSync('git', ['-C', REPO, ...args], { encoding: 'utf8' }).trim();
      const tag = git('tag', '--merged', 'HEAD', '--sort=-v:refname', '--list', 'v[0-9]*.[0-9]*.[0-9]*').split('\n').filter(Boolean)[0];
      const from = tag ?? git('rev-parse', `${git('log', '-n', '1', '--format=%H', '--', relative(REPO, CRD_FILE))}^`);
      const dir = mkdtempSync(join(tmpdir(), 'previous-chart-'));
      try {
        execFileSync('tar', ['-x', '-C', dir], { input: execFileSync('git', ['-C', REPO, 'archive', from, relative(REPO, CHART_DIR)]) });
        const previous = join(dir, relative(REPO, CHART_DIR));
        const kc = ['--kubeconfig', cluster.kubeconfigPath];
        // as the previous chart left the cluster: its CRD, its release
        expect(kubectl(['apply', '--server-side', '--force-conflicts', '-f', join(previous, 'crds')]).status).toBe(0);
        const installed = helm('install', 'tsu', previous, '--namespace', 'upgrade', '--create-namespace', ...kc, ...CREATE_TS);
        expect(installed.status, installed.stderr).toBe(0);
        // exactly as docs/kubernetes.md "Upgrading" says
        const crds = kubectl(['apply', '--server-side', '--force-conflicts', '-f', join(CHART_DIR, 'crds')]);
        expect(crds.status, crds.stderr).toBe(0);
        const upgraded = helm('upgrade', 'tsu', CHART_DIR, '--namespace', 'upgrade', ...kc, ...CREATE_TS);
        expect(upgraded.status, upgraded.stderr).toBe(0);
        const status = JSON.parse(helm('status', 'tsu', '--namespace', 'upgrade', ...kc, '-o', 'json').stdout);
        expect(status).toMatchObject({ version: 2, info: { status: 'deployed' } });
        const stored = JSON.parse(kubectl(['get', 'crd/taskservices.tasks.example.io', '-o', 'json']).stdout);
        expect(stored.spec.versions.map((v: any) => v.schema)).toEqual((customResourceDefinition() as any).spec.versions.map((v: any) => v.schema));
        // the release's objects are the new chart's, its TaskService kept
        const manifest = helm('get', 'manifest', 'tsu', '--namespace', 'upgrade', ...kc).stdout;
        const current = helm('template', 'tsu', CHART_DIR, '--namespace', 'upgrade', ...CREATE_TS).stdout;
        const kinds = (yaml: string) => parseAllDocuments(yaml).map((d) => d.toJSON()).filter((o) => o && !o.metadata?.annotations?.['helm.sh/hook']).map((o) => `${o.kind}/${o.metadata.name}`).sort();
        expect(kinds(manifest)).toEqual(kinds(current));
        expect(kubectl(['get', 'taskservice', '-n', 'upgrade', '-o', 'name']).stdout.trim()).not.toBe('');
        helm('uninstall', 'tsu', '--namespace', 'upgrade', '--no-hooks', ...kc);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }, 120_000);
  });
});
