/**
 * Pure desired state: TaskService -> every child object, complete, ready for server-side apply.
 * No I/O here; the reconciler decides what to do with the result.
 */
import { createHash } from 'node:crypto';
import { API_VERSION, GROUP, KIND, SERVICES, type ServiceName } from './crd.ts';
import { normalizeSpec, type KubeObject, type TaskService, type TaskServiceSpec } from './types.ts';

export const FIELD_MANAGER = 'taskservice-operator';
export const FINALIZER = `${GROUP}/cleanup`;
export const MANAGED_BY = 'taskservice-operator';
export const OWNER_NAME_LABEL = `${GROUP}/owner-name`;
export const OWNER_NAMESPACE_LABEL = `${GROUP}/owner-namespace`;
export const CONFIG_HASH_ANNOTATION = `${GROUP}/config-hash`;
/** Longest TaskService name whose derived names stay within Kubernetes limits (CronJob names: 52). */
export const MAX_NAME_LENGTH = 42;
export const GATEWAY_PORT = 3000;
export const FIREWALL_CONFIG_DIR = '/etc/task-firewall';

export type CronJobApiVersion = 'batch/v1' | 'batch/v1beta1';

export interface BuildOptions {
  /** Kubernetes < 1.21 serves CronJob only as batch/v1beta1; the controller discovers which. */
  cronJobApiVersion: CronJobApiVersion;
}

export class InvalidTaskServiceError extends Error {
  override name = 'InvalidTaskServiceError';
}

export type Component = ServiceName | 'cron' | 'firewall' | 'config';

export const childName = (ts: TaskService, component: Component): string => `${ts.metadata.name}-${component}`;

export const image = (spec: TaskServiceSpec, component: ServiceName | 'firewall'): string =>
  spec.image.overrides?.[component] ??
  `${spec.image.registry.replace(/\/+$/, '')}/task-service-${component}:${spec.version}`;

export function selectorLabels(ts: TaskService, component: Component): Record<string, string> {
  return {
    'app.kubernetes.io/name': 'task-service',
    'app.kubernetes.io/instance': ts.metadata.name,
    'app.kubernetes.io/component': component,
  };
}

/** Labels on every child: they also map a child back to its TaskService (cross-namespace ones too). */
export function childLabels(ts: TaskService, component: Component, spec: TaskServiceSpec): Record<string, string> {
  return {
    ...selectorLabels(ts, component),
    'app.kubernetes.io/part-of': 'task-service',
    'app.kubernetes.io/managed-by': MANAGED_BY,
    'app.kubernetes.io/version': spec.version,
    [OWNER_NAME_LABEL]: ts.metadata.name,
    [OWNER_NAMESPACE_LABEL]: ts.metadata.namespace,
  };
}

export const ownerReference = (ts: TaskService) => ({
  apiVersion: API_VERSION,
  kind: KIND,
  name: ts.metadata.name,
  uid: ts.metadata.uid,
  controller: true,
  blockOwnerDeletion: true,
});

/** Namespace of the firewall DaemonSet; another namespace than the owner's cannot use an owner reference. */
export const firewallNamespace = (ts: TaskService, spec: TaskServiceSpec): string => spec.firewall.namespace || ts.metadata.namespace;

/** True when some child lives outside the TaskService's namespace, so a finalizer must clean it up. */
export function needsFinalizer(ts: TaskService): boolean {
  const spec = normalizeSpec(ts.spec);
  return spec.firewall.enabled && firewallNamespace(ts, spec) !== ts.metadata.namespace;
}

function meta(ts: TaskService, spec: TaskServiceSpec, component: Component, namespace = ts.metadata.namespace) {
  const sameNamespace = namespace === ts.metadata.namespace;
  return {
    name: childName(ts, component),
    namespace,
    labels: childLabels(ts, component, spec),
    ...(sameNamespace ? { ownerReferences: [ownerReference(ts)] } : {}),
  };
}

const hash = (data: unknown): string => createHash('sha256').update(JSON.stringify(data)).digest('hex').slice(0, 16);

/** Non-secret environment shared by every service (the ConfigMap's data). */
export function configData(spec: TaskServiceSpec): Record<string, string> {
  return {
    // Everything behind a Kubernetes Service is behind a proxy (spec: AUTH_TRUST_HOST must be true).
    AUTH_TRUST_HOST: 'true',
    RUNTIME_ENV: 'production',
    AUTH_CALLBACK_URL: spec.publicUrl,
    ...spec.config,
    // Owned by dedicated spec fields, so they win over spec.config.
    PUBLIC_APP_URL: spec.publicUrl,
    NATS_URL: spec.natsUrl,
  };
}

const secretEnv = (name: string, ref: { name: string; key: string } | undefined) =>
  ref ? [{ name, valueFrom: { secretKeyRef: { name: ref.name, key: ref.key } } }] : [];

function serviceEnv(spec: TaskServiceSpec) {
  return [
    ...secretEnv('DATABASE_URL', spec.secrets.databaseUrl),
    ...secretEnv('AUTH_SECRET', spec.secrets.authSecret),
    ...secretEnv('CRON_SECRET', spec.secrets.cronSecret),
    ...secretEnv('TOTP_ENCRYPTION_KEY', spec.secrets.totpEncryptionKey),
  ];
}

function serviceEnvFrom(ts: TaskService, spec: TaskServiceSpec) {
  const s = spec.secrets;
  return [
    { configMapRef: { name: childName(ts, 'config') } },
    ...[s.providers, s.smtp, s.vapid].filter((r) => r !== undefined).map((r) => ({ secretRef: { name: r.name } })),
  ];
}

const restrictedContainerSecurity = {
  runAsNonRoot: true,
  runAsUser: 1001,
  runAsGroup: 1001,
  allowPrivilegeEscalation: false,
  capabilities: { drop: ['ALL'] },
};

function podSpecCommon(spec: TaskServiceSpec) {
  return {
    securityContext: { runAsNonRoot: true, runAsUser: 1001, runAsGroup: 1001, fsGroup: 1001, seccompProfile: { type: 'RuntimeDefault' } },
    ...(spec.image.pullSecrets?.length ? { imagePullSecrets: spec.image.pullSecrets.map((name) => ({ name })) } : {}),
  };
}

function deployment(ts: TaskService, spec: TaskServiceSpec, svc: ServiceName, configHash: string): KubeObject {
  const isGateway = svc === 'gateway';
  const resources = {
    requests: { memory: spec.resources.memory, cpu: spec.resources.cpu },
    limits: { memory: spec.resources.memory, cpu: spec.resources.cpu },
  };
  const container = {
    name: svc,
    image: image(spec, svc),
    imagePullPolicy: spec.image.pullPolicy,
    env: serviceEnv(spec),
    envFrom: serviceEnvFrom(ts, spec),
    resources,
    securityContext: restrictedContainerSecurity,
    ...(isGateway
      ? {
          ports: [{ name: 'http', containerPort: GATEWAY_PORT, protocol: 'TCP' }],
          // spec: liveness GET /api/health every 30 s, restart after 3 failures; readiness every 10 s.
          // The initial delay leaves room for migrations, which run before the server listens.
          livenessProbe: {
            httpGet: { path: '/api/health', port: 'http' },
            initialDelaySeconds: 30,
            periodSeconds: 30,
            timeoutSeconds: 5,
            failureThreshold: 3,
          },
          readinessProbe: { httpGet: { path: '/api/health', port: 'http' }, periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 3 },
        }
      : {}),
  };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta(ts, spec, svc),
    spec: {
      replicas: spec.replicas[svc],
      revisionHistoryLimit: 5,
      selector: { matchLabels: selectorLabels(ts, svc) },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      template: {
        metadata: { labels: childLabels(ts, svc, spec), annotations: { [CONFIG_HASH_ANNOTATION]: configHash } },
        spec: {
          ...podSpecCommon(spec),
          terminationGracePeriodSeconds: 30,
          containers: [container],
        },
      },
    },
  };
}

/** The gateway gets a ClusterIP Service on 3000; bus-only services get a headless one (pod DNS, no port). */
function service(ts: TaskService, spec: TaskServiceSpec, svc: ServiceName): KubeObject {
  const gw = svc === 'gateway';
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(ts, spec, svc),
    spec: gw
      ? { type: 'ClusterIP', selector: selectorLabels(ts, svc), ports: [{ name: 'http', port: GATEWAY_PORT, targetPort: 'http', protocol: 'TCP' }] }
      : { clusterIP: 'None', selector: selectorLabels(ts, svc) },
  };
}

/** Runs in the gateway image (Node 24 has fetch); fails the Job on any non-2xx answer. */
const CRON_SCRIPT = [
  "const r = await fetch(process.env.CRON_URL, { method: 'POST', headers: { authorization: 'Bearer ' + process.env.CRON_SECRET } });",
  "console.log('POST', process.env.CRON_URL, r.status);",
  'if (!r.ok) process.exit(1);',
].join(' ');

function cronJob(ts: TaskService, spec: TaskServiceSpec, apiVersion: CronJobApiVersion): KubeObject {
  const url = `http://${childName(ts, 'gateway')}.${ts.metadata.namespace}.svc:${GATEWAY_PORT}/api/cron`;
  return {
    apiVersion,
    kind: 'CronJob',
    metadata: meta(ts, spec, 'cron'),
    spec: {
      schedule: spec.cron.schedule,
      suspend: spec.cron.suspend,
      concurrencyPolicy: 'Forbid',
      startingDeadlineSeconds: 120,
      successfulJobsHistoryLimit: 3,
      failedJobsHistoryLimit: 3,
      jobTemplate: {
        metadata: { labels: childLabels(ts, 'cron', spec) },
        spec: {
          backoffLimit: 2,
          activeDeadlineSeconds: 240,
          template: {
            metadata: { labels: childLabels(ts, 'cron', spec) },
            spec: {
              ...podSpecCommon(spec),
              restartPolicy: 'Never',
              containers: [
                {
                  name: 'cron',
                  image: image(spec, 'gateway'),
                  imagePullPolicy: spec.image.pullPolicy,
                  command: ['node', '--input-type=module', '-e', CRON_SCRIPT],
                  env: [{ name: 'CRON_URL', value: url }, ...secretEnv('CRON_SECRET', spec.secrets.cronSecret)],
                  resources: { requests: { memory: '64Mi', cpu: '50m' }, limits: { memory: '128Mi', cpu: '200m' } },
                  securityContext: restrictedContainerSecurity,
                },
              ],
            },
          },
        },
      },
    },
  };
}

const dirOf = (p: string) => p.replace(/\/[^/]*$/, '') || '/';

function firewall(ts: TaskService, spec: TaskServiceSpec): KubeObject[] {
  const ns = firewallNamespace(ts, spec);
  const config = spec.firewall.config;
  const configJson = `${JSON.stringify(config, null, 2)}\n`;
  const configFile = `${FIREWALL_CONFIG_DIR}/config.json`;
  const socketDir = dirOf(String(config.socket_path));
  const mounts = [
    { name: 'config', mountPath: FIREWALL_CONFIG_DIR, readOnly: true },
    { name: 'run', mountPath: socketDir },
  ];
  const cli = (mode: 'core' | 'web') => ['node', 'services/firewall/src/cli.ts', mode, '--config', configFile];
  const cm: KubeObject = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: meta(ts, spec, 'firewall', ns),
    data: { 'config.json': configJson },
  };
  const ds: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: meta(ts, spec, 'firewall', ns),
    spec: {
      selector: { matchLabels: selectorLabels(ts, 'firewall') },
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
      template: {
        metadata: { labels: childLabels(ts, 'firewall', spec), annotations: { [CONFIG_HASH_ANNOTATION]: hash(configJson) } },
        spec: {
          // nftables rules belong to the node, not to a pod network namespace.
          hostNetwork: true,
          dnsPolicy: 'ClusterFirstWithHostNet',
          tolerations: [{ operator: 'Exists' }],
          priorityClassName: 'system-node-critical',
          ...(spec.image.pullSecrets?.length ? { imagePullSecrets: spec.image.pullSecrets.map((name) => ({ name })) } : {}),
          containers: [
            {
              name: 'core',
              image: image(spec, 'firewall'),
              imagePullPolicy: spec.image.pullPolicy,
              command: cli('core'),
              // The socket's group: the web container's gid may connect.
              env: [{ name: 'FIREWALL_SOCKET_GROUP', value: '1001' }],
              securityContext: { privileged: true, runAsUser: 0 },
              resources: { requests: { memory: '64Mi', cpu: '50m' }, limits: { memory: '256Mi', cpu: '500m' } },
              volumeMounts: [
                ...mounts,
                { name: 'data', mountPath: String(config.data_dir) },
                { name: 'log', mountPath: String(config.log_dir) },
              ],
            },
            {
              name: 'web',
              image: image(spec, 'firewall'),
              imagePullPolicy: spec.image.pullPolicy,
              command: cli('web'),
              // Unprivileged; reaches the core only through the socket. On the host network it listens
              // on the node's loopback only (kubectl port-forward reaches it), never on every interface.
              env: [
                { name: 'FIREWALL_WEB_HOST', value: '127.0.0.1' },
                ...secretEnv('FIREWALL_WEB_PASSWORD', spec.firewall.webPasswordSecret),
              ],
              securityContext: restrictedContainerSecurity,
              resources: { requests: { memory: '64Mi', cpu: '20m' }, limits: { memory: '256Mi', cpu: '200m' } },
              volumeMounts: mounts,
            },
          ],
          volumes: [
            { name: 'config', configMap: { name: childName(ts, 'firewall') } },
            { name: 'run', emptyDir: {} },
            { name: 'data', hostPath: { path: String(config.data_dir), type: 'DirectoryOrCreate' } },
            { name: 'log', hostPath: { path: String(config.log_dir), type: 'DirectoryOrCreate' } },
          ],
        },
      },
    },
  };
  return [cm, ds];
}

/** Every child of one TaskService, in apply order (config before its consumers). */
export function desiredChildren(ts: TaskService, opts: BuildOptions): KubeObject[] {
  if (ts.metadata.name.length > MAX_NAME_LENGTH) {
    throw new InvalidTaskServiceError(`metadata.name must be at most ${MAX_NAME_LENGTH} characters (child names derive from it)`);
  }
  const spec = normalizeSpec(ts.spec);
  const data = configData(spec);
  const configHash = hash({ data, secrets: spec.secrets });
  const objects: KubeObject[] = [
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: meta(ts, spec, 'config'), data },
    ...SERVICES.flatMap((svc) => [deployment(ts, spec, svc, configHash), service(ts, spec, svc)]),
    cronJob(ts, spec, opts.cronJobApiVersion),
  ];
  if (spec.firewall.enabled) objects.push(...firewall(ts, spec));
  return objects;
}

/** The desired state of a whole set of TaskServices (what the cluster should hold). */
export function desiredState(list: TaskService[], opts: BuildOptions): KubeObject[] {
  return list.filter((ts) => !ts.metadata.deletionTimestamp).flatMap((ts) => desiredChildren(ts, opts));
}

/** Identity of an object across kinds and namespaces, e.g. for pruning. */
export const objectKey = (o: { kind: string; metadata: { namespace?: string; name: string } }): string =>
  `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
