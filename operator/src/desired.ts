/**
 * Pure desired state: TaskService -> every child object, complete, ready for server-side apply.
 * No I/O here; the reconciler decides what to do with the result.
 */
import { createHash } from 'node:crypto';
import { API_VERSION, GROUP, KIND, MAX_NAME_LENGTH, SERVICES, type ServiceName } from './crd.ts';
import { CONTROL_PLANE_LABELS, nodeAllowances, type ClusterFacts, type NodeAllowances } from './firewall.ts';
import { normalizeSpec, type KubeObject, type TaskService, type TaskServiceSpec } from './types.ts';
import { defaultResources, POD_LIMITS } from './sizing.ts';
// The services' own declaration of what they read (a dependency-free module; every image holds the whole repository).
import { serviceEnv as declaredEnv } from '../../proto/src/service-env.ts';
import { deriveSubkeys, parseKeyRing, RING_SERVICES, type RingService } from '../../proto/src/ring-keys.ts';

export const FIELD_MANAGER = 'taskservice-operator';
export const FINALIZER = `${GROUP}/cleanup`;
export const MANAGED_BY = 'taskservice-operator';
export const OWNER_NAME_LABEL = `${GROUP}/owner-name`;
export const OWNER_NAMESPACE_LABEL = `${GROUP}/owner-namespace`;
export const CONFIG_HASH_ANNOTATION = `${GROUP}/config-hash`;
/** On a ring service's pod template: its derived ring's checksum, so a rotation of SECRETS_KEYRING rolls its pods. */
export const SUBKEYS_CHECKSUM_ANNOTATION = `${GROUP}/subkeys-checksum`;
export const GATEWAY_PORT = 3000;
export const FIREWALL_CONFIG_DIR = '/etc/task-firewall';
export const CNPG_API_VERSION = 'postgresql.cnpg.io/v1';

export type CronJobApiVersion = 'batch/v1' | 'batch/v1beta1';
export type PdbApiVersion = 'policy/v1' | 'policy/v1beta1';

export interface BuildOptions {
  /** Kubernetes < 1.21 serves CronJob only as batch/v1beta1; the controller discovers which. */
  cronJobApiVersion: CronJobApiVersion;
  /** Kubernetes < 1.21 serves PodDisruptionBudget only as policy/v1beta1 (default policy/v1) */
  pdbApiVersion?: PdbApiVersion;
  /** whether CloudNativePG's Cluster kind is served (spec.database.managed) */
  cloudNativePG?: boolean;
  /** what the reconciler found out for the firewall; without it no firewall is rendered */
  firewall?: FirewallFacts;
  /** checksums of the ring services' derived rings (`subkeySecrets`), put on their pod templates */
  subkeyChecksums?: Partial<Record<ServiceName, string>>;
}

export interface FirewallFacts {
  cluster: ClusterFacts;
  /** `namespace/name` of the TaskService that runs the cluster's firewall when it is not this one */
  ownedBy?: string;
  /** whether spec.firewall.webPasswordSecret names an existing Secret key */
  webPassword: boolean;
}

/** A condition the builders report besides Ready/Progressing/Degraded (e.g. why the firewall does not run). */
export interface PlanCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
}

export interface Plan {
  objects: KubeObject[];
  conditions: PlanCondition[];
}

export class InvalidTaskServiceError extends Error {
  override name = 'InvalidTaskServiceError';
}

export type Component = ServiceName | 'cron' | 'firewall' | 'config' | 'generated' | 'nats' | 'db';

export { MAX_NAME_LENGTH };

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
export function childLabels(ts: TaskService, component: Component, spec: Pick<TaskServiceSpec, 'version'>): Record<string, string> {
  return {
    ...selectorLabels(ts, component),
    'app.kubernetes.io/part-of': 'task-service',
    'app.kubernetes.io/managed-by': MANAGED_BY,
    'app.kubernetes.io/version': spec.version,
    [OWNER_NAME_LABEL]: ts.metadata.name,
    [OWNER_NAMESPACE_LABEL]: ts.metadata.namespace,
  };
}

/**
 * childLabels without spec.version: for the pod template of a child whose image does not follow
 * spec.version (NATS), where the version label alone would restart its pods on every upgrade.
 */
export function versionlessLabels(ts: TaskService, component: Component): Record<string, string> {
  const { 'app.kubernetes.io/version': _version, ...labels } = childLabels(ts, component, { version: '' });
  return labels;
}

export const ownerReference = (ts: TaskService) => ({
  apiVersion: API_VERSION,
  kind: KIND,
  name: ts.metadata.name,
  uid: ts.metadata.uid,
  controller: true,
  blockOwnerDeletion: true,
});

/**
 * Whether the data outlives the TaskService: true unless spec.database.managed.deletionPolicy is Delete.
 * The generated Secret follows the database: its TOTP_ENCRYPTION_KEY encrypts data stored there.
 */
export const retainsData = (spec: TaskServiceSpec): boolean => spec.database?.managed?.deletionPolicy !== 'Delete';

/** Set on what a deleted TaskService left behind (its Cluster, its generated Secret), once an Event has said so. */
export const RETAINED_ANNOTATION = `${GROUP}/retained`;

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

/** Keys the operator generates into `<name>-generated` (never overwriting a value already there). */
export const GENERATED = {
  AUTH_SECRET: 'AUTH_SECRET',
  CRON_SECRET: 'CRON_SECRET',
  TOTP_ENCRYPTION_KEY: 'TOTP_ENCRYPTION_KEY',
  SECRETS_KEYRING: 'SECRETS_KEYRING',
  NATS_USER: 'NATS_USER',
  NATS_PASSWORD: 'NATS_PASSWORD',
} as const;
export const NATS_PORT = 4222;
const NATS_MONITOR_PORT = 8222;
/** Route port of the clustered NATS (spec.nats.replicas 3): the servers replicate JetStream over it. */
export const NATS_CLUSTER_PORT = 6222;

/** Where each piece of the system comes from: referenced by the admin, or run/generated by the operator. */
export interface Wiring {
  publicUrl: string;
  natsUrl: string;
  /** the operator runs NATS (StatefulSet) with generated credentials */
  managedNats: boolean;
  databaseUrl: SecretKeyRef;
  authSecret: SecretKeyRef;
  cronSecret: SecretKeyRef;
  totpEncryptionKey: SecretKeyRef;
  /**
   * The master key ring sealing webhook and channel secrets. No Deployment gets it: the operator reads
   * it and writes each ring service its derived ring (`subkeys`; docs/upgrading.md#derived-rings-secrets_subkeys).
   */
  secretsKeyring: SecretKeyRef;
  /** each ring service's derived ring (SECRETS_SUBKEYS), in a Secret of its own */
  subkeys: Record<RingService, SecretKeyRef>;
  /** keys the generated Secret must hold */
  generatedKeys: string[];
}

interface SecretKeyRef {
  name: string;
  key: string;
}

/** Pure: resolve spec references and operator-provided parts; a spec that names no database is invalid. */
export function wiring(ts: TaskService, spec: TaskServiceSpec): Wiring {
  const generated = childName(ts, 'generated');
  const s = spec.secrets ?? {};
  const keys: string[] = [];
  const gen = (ref: SecretKeyRef | undefined, key: string): SecretKeyRef => {
    if (ref) return ref;
    keys.push(key);
    return { name: generated, key };
  };
  const databaseUrl =
    s.databaseUrl ?? spec.database?.secretKeyRef ?? (spec.database?.managed ? { name: `${childName(ts, 'db')}-app`, key: 'uri' } : undefined);
  if (!databaseUrl) {
    throw new InvalidTaskServiceError('spec.database: reference a Secret key holding DATABASE_URL (database.secretKeyRef) or set database.managed');
  }
  const host = spec.ingress?.host;
  const publicUrl = spec.publicUrl ?? (host ? `${spec.ingress?.tlsSecretName ? 'https' : 'http'}://${host}` : undefined);
  if (!publicUrl) throw new InvalidTaskServiceError('spec.publicUrl: set it, or spec.ingress.host to derive it');
  const existingNats = spec.nats.url ?? spec.natsUrl;
  const w = {
    publicUrl,
    natsUrl: existingNats ?? `nats://${childName(ts, 'nats')}.${ts.metadata.namespace}.svc:${NATS_PORT}`,
    managedNats: !existingNats,
    databaseUrl,
    authSecret: gen(s.authSecret, GENERATED.AUTH_SECRET),
    cronSecret: gen(s.cronSecret, GENERATED.CRON_SECRET),
    totpEncryptionKey: gen(s.totpEncryptionKey, GENERATED.TOTP_ENCRYPTION_KEY),
    secretsKeyring: gen(s.secretsKeyring, GENERATED.SECRETS_KEYRING),
    subkeys: Object.fromEntries(RING_SERVICES.map((svc) => [svc, { name: subkeysSecretName(ts, svc), key: 'SECRETS_SUBKEYS' }])) as Record<RingService, SecretKeyRef>,
  };
  if (w.managedNats) keys.push(GENERATED.NATS_USER, GENERATED.NATS_PASSWORD);
  return { ...w, generatedKeys: keys };
}

/** Non-secret environment shared by every service (the ConfigMap's data). */
export function configData(spec: TaskServiceSpec, w: Pick<Wiring, 'publicUrl' | 'natsUrl' | 'managedNats'>): Record<string, string> {
  return {
    // Everything behind a Kubernetes Service is behind a proxy (spec: AUTH_TRUST_HOST must be true).
    AUTH_TRUST_HOST: 'true',
    RUNTIME_ENV: 'production',
    AUTH_CALLBACK_URL: w.publicUrl,
    ...spec.config,
    // Owned by dedicated spec fields, so they win over spec.config.
    PUBLIC_APP_URL: w.publicUrl,
    NATS_URL: w.natsUrl,
    // the services' stream kept on every server of the operator-run cluster (runtime bus/nats.ts)
    ...(w.managedNats && spec.nats.replicas > 1 ? { NATS_STREAM_REPLICAS: String(spec.nats.replicas) } : {}),
  };
}

const secretEnv = (name: string, ref: { name: string; key: string } | undefined) =>
  ref ? [{ name, valueFrom: { secretKeyRef: { name: ref.name, key: ref.key } } }] : [];

/** The variables an admin's Secret may hold (its keys are the variables' names), each read only if present. */
const SECRET_KEYS = {
  providers: ['CODEHOST_CLIENT_ID', 'CODEHOST_CLIENT_SECRET', 'CHAT_CLIENT_ID', 'CHAT_CLIENT_SECRET', 'SEARCH_CLIENT_ID', 'SEARCH_CLIENT_SECRET', 'CONSUMER_ACCOUNT_CLIENT_ID', 'CONSUMER_ACCOUNT_CLIENT_SECRET', 'OIDC_CLIENT_ID', 'OIDC_CLIENT_SECRET', 'OIDC_ISSUER'],
  smtp: ['SMTP_HOST', 'SMTP_PORT', 'SMTP_USER', 'SMTP_PASS', 'SMTP_FROM', 'SMTP_SECURE'],
  vapid: ['PUBLIC_VAPID_PUBLIC_KEY', 'VAPID_PRIVATE_KEY', 'VAPID_CONTACT'],
  nats: ['NATS_USER', 'NATS_PASSWORD', 'NATS_TOKEN', 'NATS_CREDS_FILE'],
} as const;

/**
 * Every Secret-held variable with where it comes from: the wiring's single keys, and each key of the
 * admin's providers/smtp/vapid/NATS Secrets (optional: a Secret may hold only some of them).
 */
function secretSources(ts: TaskService, spec: TaskServiceSpec, w: Wiring): Map<string, { name: string; key: string; optional?: true }> {
  const out = new Map<string, { name: string; key: string; optional?: true }>([
    ['DATABASE_URL', w.databaseUrl],
    ['AUTH_SECRET', w.authSecret],
    ['CRON_SECRET', w.cronSecret],
    ['TOTP_ENCRYPTION_KEY', w.totpEncryptionKey],
    ['SECRETS_KEYRING', w.secretsKeyring],
  ]);
  const s = spec.secrets ?? {};
  const fromSecret = (ref: { name: string } | undefined, keys: readonly string[]) => {
    if (ref) for (const key of keys) out.set(key, { name: ref.name, key, optional: true });
  };
  fromSecret(s.providers, SECRET_KEYS.providers);
  fromSecret(s.smtp, SECRET_KEYS.smtp);
  fromSecret(s.vapid, SECRET_KEYS.vapid);
  fromSecret(spec.nats.credentialsSecret, SECRET_KEYS.nats);
  if (w.managedNats) {
    const generated = childName(ts, 'generated');
    out.set('NATS_USER', { name: generated, key: GENERATED.NATS_USER });
    out.set('NATS_PASSWORD', { name: generated, key: GENERATED.NATS_PASSWORD });
  }
  return out;
}

/**
 * The Secret keys one Deployment gets: one `secretKeyRef` per variable its service declares
 * (proto/src/service-env.ts), never a whole Secret, so e.g. the gateway never holds
 * TOTP_ENCRYPTION_KEY. No Deployment gets the master SECRETS_KEYRING: a ring service gets its own
 * derived ring (SECRETS_SUBKEYS from `<name>-<service>-keys`) instead. The ring services do not get
 * AUTH_SECRET: they read it only to derive a ring key when they have no ring, and the operator always
 * gives them one.
 */
export function serviceSecretEnv(ts: TaskService, spec: TaskServiceSpec, w: Wiring, svc: ServiceName) {
  const declared = declaredEnv(svc);
  const ring = isRingService(svc) ? w.subkeys[svc] : undefined;
  return [...secretSources(ts, spec, w)]
    .flatMap(([name, ref]): [string, { name: string; key: string; optional?: true }][] => (name === 'SECRETS_KEYRING' ? (ring ? [['SECRETS_SUBKEYS', ring]] : []) : [[name, ref]]))
    // TOTP's key opens only values stored before the ring; the admin says when none remain (spec.secrets.preRingValues)
    .filter(([name]) => declared.has(name) && !(ring && (name === 'AUTH_SECRET' || (name === 'TOTP_ENCRYPTION_KEY' && spec.secrets?.preRingValues === false))))
    .map(([name, ref]) => ({ name, valueFrom: { secretKeyRef: ref } }));
}

const isRingService = (svc: ServiceName): svc is RingService => (RING_SERVICES as string[]).includes(svc);

/** The Secret holding one ring service's derived ring. */
export const subkeysSecretName = (ts: TaskService, svc: RingService): string => `${ts.metadata.name}-${svc}-keys`;

/** A derived ring's checksum in its Deployment's pod template (SUBKEYS_CHECKSUM_ANNOTATION): a new ring rolls the pods. */
export const subkeysChecksum = (derivedRing: string): string => createHash('sha256').update(derivedRing).digest('hex').slice(0, 16);

/**
 * Pure: from the master ring's value (SECRETS_KEYRING as the referenced or generated Secret holds it),
 * one Secret per ring service with only that service's derived ring, and each ring's checksum for its
 * pod template (a rotation rolls the pods). A value the services would refuse: the problem, as a string.
 */
export function subkeySecrets(ts: TaskService, masterRing: string): { objects: KubeObject[]; checksums: Record<RingService, string>; keyIds: string[] } | string {
  const ring = parseKeyRing(masterRing);
  if (typeof ring === 'string') return ring;
  const checksums = {} as Record<RingService, string>;
  const objects = RING_SERVICES.map((svc): KubeObject => {
    const value = deriveSubkeys(ring, svc);
    checksums[svc] = subkeysChecksum(value);
    return {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: subkeysSecretName(ts, svc),
        namespace: ts.metadata.namespace,
        labels: {
          'app.kubernetes.io/part-of': 'task-service',
          'app.kubernetes.io/managed-by': MANAGED_BY,
          'app.kubernetes.io/component': `${svc}-keys`,
          [OWNER_NAME_LABEL]: ts.metadata.name,
          [OWNER_NAMESPACE_LABEL]: ts.metadata.namespace,
        },
        // derivable again from the master at any time: garbage-collected with the TaskService
        ownerReferences: [ownerReference(ts)],
      },
      type: 'Opaque',
      data: { SECRETS_SUBKEYS: Buffer.from(value).toString('base64') },
    };
  });
  return { objects, checksums, keyIds: ring.map((k) => k.id) };
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

const GATEWAY_SHUTDOWN_DELAY_SECONDS = 5;
const BUS_SERVICE_HEALTH_PORT = 8080;
/** The gateway's Prometheus listener (METRICS_PORT); bus-only services serve /metrics on their health port. */
export const GATEWAY_METRICS_PORT = 9464;

/** spec.resources as one request = limit pair; a part left unset is the default limit, as the CRD used to default it. */
function guaranteed(r: NonNullable<TaskServiceSpec['resources']>) {
  const pair = { memory: r.memory ?? POD_LIMITS.memory, cpu: r.cpu ?? POD_LIMITS.cpu };
  return { requests: pair, limits: { ...pair } };
}

function deployment(ts: TaskService, spec: TaskServiceSpec, svc: ServiceName, configHash: string, w: Wiring, subkeysChecksum: string | undefined): KubeObject {
  const isGateway = svc === 'gateway';
  // spec.serviceResources.<svc> as given (e.g. a CPU request below its limit), else spec.resources as
  // request = limit, else the service's own requests below the common limits (sizing.ts).
  const resources = spec.serviceResources?.[svc] ?? (spec.resources ? guaranteed(spec.resources) : defaultResources(svc));
  const container = {
    name: svc,
    image: image(spec, svc),
    imagePullPolicy: spec.image.pullPolicy,
    // The gateway keeps answering for a few seconds after SIGTERM, until kube-proxy has dropped its
    // endpoint (a rollout then loses no request); terminationGracePeriodSeconds covers it and the drain.
    // Bus-only services answer probes on HEALTH_PORT (runtime/health-listener.ts): a rollout then waits
    // until the new pod has subscribed before it stops the old one.
    env: [
      ...serviceSecretEnv(ts, spec, w, svc),
      // Every service answers probes on HEALTH_PORT from its first moment (runtime/health-listener.ts):
      // alive while it waits for the database or the bus, never restarted for their outage.
      { name: 'HEALTH_PORT', value: String(BUS_SERVICE_HEALTH_PORT) },
      ...(isGateway
        ? [
            { name: 'SHUTDOWN_DELAY_SECONDS', value: String(GATEWAY_SHUTDOWN_DELAY_SECONDS) },
            { name: 'METRICS_PORT', value: String(GATEWAY_METRICS_PORT) },
          ]
        : []),
    ],
    // the non-secret settings (spec.config and the operator's own); Secrets only per key, above
    envFrom: [{ configMapRef: { name: childName(ts, 'config') } }],
    resources,
    securityContext: restrictedContainerSecurity,
    // Liveness never depends on the database or NATS: every replica shares them, so a probe that did
    // would restart them all during an outage, and each restart waits out the kubelet's backoff.
    livenessProbe: { httpGet: { path: '/livez', port: 'health' }, initialDelaySeconds: 10, periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 6 },
    ...(isGateway
      ? {
          ports: [
            { name: 'http', containerPort: GATEWAY_PORT, protocol: 'TCP' },
            { name: 'metrics', containerPort: GATEWAY_METRICS_PORT, protocol: 'TCP' },
            { name: 'health', containerPort: BUS_SERVICE_HEALTH_PORT, protocol: 'TCP' },
          ],
          // Ready once it listens (after migrations), until it drains. Not the database: a gateway out of
          // the Service turns the 503 that says "database unavailable" into a refused connection.
          readinessProbe: { httpGet: { path: '/readyz', port: 'http' }, periodSeconds: 5, timeoutSeconds: 5, failureThreshold: 3 },
        }
      : {
          ports: [{ name: 'health', containerPort: BUS_SERVICE_HEALTH_PORT, protocol: 'TCP' }],
          readinessProbe: { httpGet: { path: '/health', port: 'health' }, periodSeconds: 5, timeoutSeconds: 5, failureThreshold: 3 },
        }),
  };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta(ts, spec, svc),
    spec: {
      // An HPA owns spec.replicas of an autoscaled service: leaving it out of the apply gives it up.
      ...(spec.autoscaled?.includes(svc) ? {} : { replicas: spec.replicas[svc] }),
      revisionHistoryLimit: 5,
      selector: { matchLabels: selectorLabels(ts, svc) },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      template: {
        metadata: { labels: childLabels(ts, svc, spec), annotations: { [CONFIG_HASH_ANNOTATION]: configHash, ...(subkeysChecksum ? { [SUBKEYS_CHECKSUM_ANNOTATION]: subkeysChecksum } : {}) } },
        spec: {
          ...podSpecCommon(spec),
          terminationGracePeriodSeconds: 30,
          containers: [container],
        },
      },
    },
  };
}

/**
 * The gateway gets a ClusterIP Service on 3000; bus-only services get a headless one (pod DNS). Each
 * names a `metrics` port for a ServiceMonitor (the chart's): the gateway's METRICS_PORT, the others'
 * health port. The Ingress routes only to 3000, so metrics never leave the cluster.
 */
function service(ts: TaskService, spec: TaskServiceSpec, svc: ServiceName): KubeObject {
  const gw = svc === 'gateway';
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(ts, spec, svc),
    spec: gw
      ? {
          type: 'ClusterIP',
          selector: selectorLabels(ts, svc),
          ports: [
            { name: 'http', port: GATEWAY_PORT, targetPort: 'http', protocol: 'TCP' },
            { name: 'metrics', port: GATEWAY_METRICS_PORT, targetPort: 'metrics', protocol: 'TCP' },
          ],
        }
      : { clusterIP: 'None', selector: selectorLabels(ts, svc), ports: [{ name: 'metrics', port: BUS_SERVICE_HEALTH_PORT, targetPort: 'health', protocol: 'TCP' }] },
  };
}

/**
 * A node drain (an upgrade of the cluster) evicts at most one pod of a service at a time, so a service
 * with 2+ replicas keeps serving; with 1 replica the drain still proceeds (it does not block forever).
 */
function disruptionBudget(ts: TaskService, spec: TaskServiceSpec, component: ServiceName | 'nats', apiVersion: PdbApiVersion): KubeObject {
  return {
    apiVersion,
    kind: 'PodDisruptionBudget',
    metadata: meta(ts, spec, component),
    spec: { maxUnavailable: 1, selector: { matchLabels: selectorLabels(ts, component) } },
  };
}

/** Runs in the gateway image (Node 24 has fetch); fails the Job on any non-2xx answer. */
const CRON_SCRIPT = [
  "const r = await fetch(process.env.CRON_URL, { method: 'POST', headers: { authorization: 'Bearer ' + process.env.CRON_SECRET } });",
  "console.log('POST', process.env.CRON_URL, r.status);",
  'if (!r.ok) process.exit(1);',
].join(' ');

function cronJob(ts: TaskService, spec: TaskServiceSpec, apiVersion: CronJobApiVersion, w: Wiring): KubeObject {
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
                  env: [{ name: 'CRON_URL', value: url }, ...secretEnv('CRON_SECRET', w.cronSecret)],
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

/**
 * First boot only: writes the daemon's rules.json (its store shape) with the node's required ports
 * when none exists, so the first ruleset the daemon enforces keeps the node working. Never
 * overwrites rules an admin has changed since.
 */
const SEED_SCRIPT = [
  "import { existsSync, writeFileSync } from 'node:fs';",
  'const f = process.env.RULES_FILE;',
  "if (existsSync(f)) { console.log('keeping', f); } else {",
  'const r = JSON.parse(process.env.RULES);',
  "writeFileSync(f, JSON.stringify({ current: r, staged: r, backup: null, pending: null, acceptance: 'idle', last_apply: null }, null, 2) + '\\n', { mode: 0o600, flag: 'wx' });",
  "console.log('seeded', f); }",
].join(' ');

function firewall(ts: TaskService, spec: TaskServiceSpec, allow: NodeAllowances, web: boolean): KubeObject[] {
  const ns = firewallNamespace(ts, spec);
  const container = (spec.firewall.config.container ?? {}) as { custom_networks?: string[] };
  // The node's networks join the admin's: whitelisted sources, accepted on every port.
  const config: Record<string, unknown> = {
    ...spec.firewall.config,
    container: { ...container, custom_networks: [...new Set([...(container.custom_networks ?? []), ...allow.networks])] },
  };
  const configJson = `${JSON.stringify(config, null, 2)}\n`;
  const configFile = `${FIREWALL_CONFIG_DIR}/config.json`;
  const socketDir = dirOf(String(config.socket_path));
  const dataDir = String(config.data_dir);
  const rules = { tcp: allow.tcp, udp: allow.udp, blacklist: [], whitelist: [], forwarding: [], custom: [] };
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
  const small = { requests: { memory: '64Mi', cpu: '20m' }, limits: { memory: '256Mi', cpu: '200m' } };
  const ds: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: meta(ts, spec, 'firewall', ns),
    spec: {
      selector: { matchLabels: selectorLabels(ts, 'firewall') },
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
      template: {
        metadata: { labels: childLabels(ts, 'firewall', spec), annotations: { [CONFIG_HASH_ANNOTATION]: hash({ configJson, rules }) } },
        spec: {
          // nftables rules belong to the node, not to a pod network namespace.
          hostNetwork: true,
          dnsPolicy: 'ClusterFirstWithHostNet',
          // Off control-plane nodes unless asked: a mistake there takes the whole cluster down.
          ...(spec.firewall.controlPlane
            ? { tolerations: [{ operator: 'Exists' }] }
            : {
                affinity: {
                  nodeAffinity: {
                    requiredDuringSchedulingIgnoredDuringExecution: {
                      nodeSelectorTerms: [{ matchExpressions: CONTROL_PLANE_LABELS.map((key) => ({ key, operator: 'DoesNotExist' })) }],
                    },
                  },
                },
              }),
          priorityClassName: 'system-node-critical',
          ...(spec.image.pullSecrets?.length ? { imagePullSecrets: spec.image.pullSecrets.map((name) => ({ name })) } : {}),
          initContainers: [
            {
              name: 'seed-rules',
              image: image(spec, 'firewall'),
              imagePullPolicy: spec.image.pullPolicy,
              command: ['node', '--input-type=module', '-e', SEED_SCRIPT],
              env: [
                { name: 'RULES_FILE', value: `${dataDir}/rules.json` },
                { name: 'RULES', value: JSON.stringify(rules) },
              ],
              securityContext: { runAsUser: 0, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'], add: ['DAC_OVERRIDE'] } },
              resources: small,
              volumeMounts: [{ name: 'data', mountPath: dataDir }],
            },
          ],
          containers: [
            {
              name: 'core',
              image: image(spec, 'firewall'),
              imagePullPolicy: spec.image.pullPolicy,
              command: cli('core'),
              env: [
                // The socket's group: the web container's gid may connect.
                { name: 'FIREWALL_SOCKET_GROUP', value: '1001' },
                { name: 'NODE_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } },
                // An apply (the first one too) is confirmed only while these still answer (contracts.md).
                { name: 'FIREWALL_SELF_CONFIRM', value: allow.selfConfirm },
              ],
              securityContext: { privileged: true, runAsUser: 0 },
              // Ready only while the kernel enforces confirmed rules built from this ConfigMap's options (not
              // pending, not rolled back, not changed behind the daemon): the rollout goes on to the next node
              // once this one confirmed, and the TaskService's Firewall condition counts ready daemons.
              readinessProbe: {
                exec: { command: ['node', 'services/firewall/src/ready.ts', '--socket', String(config.socket_path)] },
                periodSeconds: 10,
                timeoutSeconds: 5,
                failureThreshold: 1,
              },
              resources: { requests: { memory: '64Mi', cpu: '50m' }, limits: { memory: '256Mi', cpu: '500m' } },
              volumeMounts: [...mounts, { name: 'data', mountPath: dataDir }, { name: 'log', mountPath: String(config.log_dir) }],
            },
            // Without a password the web component would exit at start and crash-loop: left out (a condition says why).
            ...(web
              ? [
                  {
                    name: 'web',
                    image: image(spec, 'firewall'),
                    imagePullPolicy: spec.image.pullPolicy,
                    command: cli('web'),
                    // Unprivileged; reaches the core only through the socket. On the host network it listens
                    // on the node's loopback only (kubectl port-forward reaches it), never on every interface.
                    env: [{ name: 'FIREWALL_WEB_HOST', value: '127.0.0.1' }, ...secretEnv('FIREWALL_WEB_PASSWORD', spec.firewall.webPasswordSecret)],
                    securityContext: restrictedContainerSecurity,
                    resources: small,
                    volumeMounts: mounts,
                  },
                ]
              : []),
          ],
          volumes: [
            { name: 'config', configMap: { name: childName(ts, 'firewall') } },
            { name: 'run', emptyDir: {} },
            { name: 'data', hostPath: { path: dataDir, type: 'DirectoryOrCreate' } },
            { name: 'log', hostPath: { path: String(config.log_dir), type: 'DirectoryOrCreate' } },
          ],
        },
      },
    },
  };
  return [cm, ds];
}

/** The firewall part of a plan: its objects when it may run, and the conditions saying what runs and why. */
function firewallPlan(ts: TaskService, spec: TaskServiceSpec, facts: FirewallFacts | undefined): Plan {
  if (!spec.firewall.enabled) return { objects: [], conditions: [] };
  const off = (reason: string, message: string): Plan => ({ objects: [], conditions: [{ type: 'Firewall', status: 'False', reason, message }] });
  if (!facts) return off('ClusterUnknown', 'the cluster facts the firewall needs were not gathered');
  if (facts.ownedBy) return off('AnotherFirewall', `only one firewall per node: TaskService ${facts.ownedBy} already runs it`);
  const allow = nodeAllowances(spec, facts.cluster);
  if ('problem' in allow) return off('NodeNetworksUnknown', allow.problem);
  const where = spec.firewall.controlPlane ? 'every node' : 'every node except control-plane nodes';
  return {
    objects: firewall(ts, spec, allow, facts.webPassword),
    conditions: [
      { type: 'Firewall', status: 'True', reason: 'Deployed', message: `on ${where}; ${allow.networks.length} cluster networks whitelisted` },
      facts.webPassword
        ? { type: 'FirewallWeb', status: 'True', reason: 'Deployed', message: 'web component on each node at 127.0.0.1' }
        : {
            type: 'FirewallWeb',
            status: 'False',
            reason: 'NoPassword',
            message: 'web component not started: spec.firewall.webPasswordSecret does not name an existing Secret key',
          },
    ],
  };
}

/** Every child of one TaskService, in apply order (config before its consumers). */
export function desiredChildren(ts: TaskService, opts: BuildOptions): KubeObject[] {
  return plan(ts, opts).objects;
}

/** Children plus the extra conditions that explain them. */
export function plan(ts: TaskService, opts: BuildOptions): Plan {
  if (ts.metadata.name.length > MAX_NAME_LENGTH) {
    throw new InvalidTaskServiceError(`metadata.name must be at most ${MAX_NAME_LENGTH} characters (child names derive from it)`);
  }
  const spec = normalizeSpec(ts.spec);
  const w = wiring(ts, spec);
  const data = configData(spec, w);
  // the derived rings have their own checksum (per ring service), so the other Deployments do not roll for them
  const configHash = hash({ data, w: { ...w, subkeys: undefined } });
  const conditions: PlanCondition[] = [];
  const objects: KubeObject[] = [
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: meta(ts, spec, 'config'), data },
    ...(w.managedNats ? natsServer(ts, spec, opts.pdbApiVersion ?? 'policy/v1') : []),
    ...SERVICES.flatMap((svc) => [deployment(ts, spec, svc, configHash, w, opts.subkeyChecksums?.[svc]), service(ts, spec, svc), disruptionBudget(ts, spec, svc, opts.pdbApiVersion ?? 'policy/v1')]),
    cronJob(ts, spec, opts.cronJobApiVersion, w),
    ...(spec.ingress ? [ingress(ts, spec, spec.ingress)] : []),
  ];
  if (spec.database?.managed && !spec.database.secretKeyRef && !spec.secrets?.databaseUrl) {
    if (opts.cloudNativePG) objects.push(postgresCluster(ts, spec, spec.database.managed));
    else {
      conditions.push({
        type: 'Database',
        status: 'False',
        reason: 'CloudNativePGMissing',
        message: 'spec.database.managed needs the CloudNativePG operator (CRD clusters.postgresql.cnpg.io); install it or reference a Secret key',
      });
    }
  }
  const fw = firewallPlan(ts, spec, opts.firewall);
  return { objects: [...objects, ...fw.objects], conditions: [...conditions, ...fw.conditions] };
}

export interface NatsServerConfigOptions {
  clientPort: number;
  monitorPort: number;
  clusterPort: number;
  /** the cluster's name (every server the same) */
  clusterName: string;
  /** how many servers: the config routes to `$NATS_ROUTE_0` … `$NATS_ROUTE_<n-1>` */
  servers: number;
  storeDir: string;
  /** listen address; unset: every interface */
  host?: string;
}

/**
 * The variable a cluster's configuration file reads the password from, and its value. nats-server parses
 * a `$VAR`'s value as a configuration value, not as text: a generated base64url password such as
 * `12-k…` reads as a date, `3e5x…` fails to parse, `1k` is a number — the server does not start.
 * Double quotes make any such value a string (base64url holds no quote or backslash).
 */
export const NATS_CONFIG_PASSWORD = 'NATS_PASSWORD_QUOTED';
export const quotedForNatsConfig = (password: string): string => `"${password}"`;

/**
 * nats-server's configuration file of one server of a JetStream cluster. The values that differ per
 * server or are secret come from its environment (nats-server resolves `$VAR`): NATS_SERVER_NAME
 * (unique; JetStream's placement needs it), NATS_USER and NATS_CONFIG_PASSWORD (the password quoted;
 * clients and routes alike, so nothing joins the cluster without the generated password) and
 * NATS_ROUTE_<i> (each server's route URL with those credentials; Kubernetes fills them in from the
 * Secret, see natsServer).
 */
export function natsServerConfig(o: NatsServerConfigOptions): string {
  const routes = Array.from({ length: o.servers }, (_, i) => `$NATS_ROUTE_${i}`).join(', ');
  return [
    ...(o.host ? [`host: "${o.host}"`] : []),
    `port: ${o.clientPort}`,
    `http_port: ${o.monitorPort}`,
    'server_name: $NATS_SERVER_NAME',
    `authorization { user: $NATS_USER, password: $${NATS_CONFIG_PASSWORD} }`,
    `jetstream { store_dir: "${o.storeDir}" }`,
    'cluster {',
    `  name: "${o.clusterName}"`,
    ...(o.host ? [`  host: "${o.host}"`] : []),
    `  port: ${o.clusterPort}`,
    `  authorization { user: $NATS_USER, password: $${NATS_CONFIG_PASSWORD} }`,
    `  routes: [${routes}]`,
    // a server back from a restart is a route again within seconds (default: 1 s between attempts)
    '  connect_retries: 120',
    '}',
    '',
  ].join('\n');
}

/** Route URL of server `i` of a cluster, credentials as Kubernetes `$(VAR)` references resolved in the pod. */
const natsRoute = (host: string): string => `nats://$(NATS_USER):$(NATS_PASSWORD)@${host}:${NATS_CLUSTER_PORT}`;

/**
 * The bus when none is referenced: NATS (the official image) with JetStream on a persistent volume and
 * user/password authentication from the generated Secret. spec.nats.replicas 1: one server from
 * flags (as before, so operator upgrades leave its pod alone); 3: a JetStream cluster configured from
 * a ConfigMap (natsServerConfig), routed over a headless Service (stable pod names), and a
 * PodDisruptionBudget so a drain takes one server at a time — the streams (3 replicas) stay writable
 * with two of three.
 */
function natsServer(ts: TaskService, spec: TaskServiceSpec, pdbApiVersion: PdbApiVersion): KubeObject[] {
  const name = childName(ts, 'nats');
  const generated = childName(ts, 'generated');
  const labels = selectorLabels(ts, 'nats');
  const clustered = spec.nats.replicas > 1;
  const routesService = `${name}-routes`;
  const credentials = [...secretEnv('NATS_USER', { name: generated, key: GENERATED.NATS_USER }), ...secretEnv('NATS_PASSWORD', { name: generated, key: GENERATED.NATS_PASSWORD })];
  const config = clustered
    ? natsServerConfig({
        clientPort: NATS_PORT,
        monitorPort: NATS_MONITOR_PORT,
        clusterPort: NATS_CLUSTER_PORT,
        clusterName: name,
        servers: spec.nats.replicas,
        storeDir: '/data',
      })
    : undefined;
  const container = {
    name: 'nats',
    image: spec.nats.image,
    ...(config
      ? {
          args: ['--config=/etc/nats/nats.conf'],
          env: [
            ...credentials,
            { name: NATS_CONFIG_PASSWORD, value: quotedForNatsConfig('$(NATS_PASSWORD)') },
            { name: 'NATS_SERVER_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
            ...Array.from({ length: spec.nats.replicas }, (_, i) => ({
              name: `NATS_ROUTE_${i}`,
              value: natsRoute(`${name}-${i}.${routesService}.${ts.metadata.namespace}.svc`),
            })),
          ],
        }
      : {
          args: ['--jetstream', '--store_dir=/data', `--http_port=${NATS_MONITOR_PORT}`, '--user=$(NATS_USER)', '--pass=$(NATS_PASSWORD)'],
          env: credentials,
        }),
    ports: [
      { name: 'client', containerPort: NATS_PORT, protocol: 'TCP' },
      ...(config ? [{ name: 'cluster', containerPort: NATS_CLUSTER_PORT, protocol: 'TCP' }] : []),
      { name: 'monitor', containerPort: NATS_MONITOR_PORT, protocol: 'TCP' },
    ],
    // Ready only once JetStream answers (the services need streams at start).
    readinessProbe: { httpGet: { path: '/healthz?js-enabled-only=true', port: 'monitor' }, periodSeconds: 10 },
    livenessProbe: { httpGet: { path: '/healthz', port: 'monitor' }, initialDelaySeconds: 10, periodSeconds: 30 },
    resources: { requests: { memory: '256Mi', cpu: '100m' }, limits: { memory: '1Gi', cpu: '1' } },
    securityContext: restrictedContainerSecurity,
    volumeMounts: [{ name: 'data', mountPath: '/data' }, ...(config ? [{ name: 'config', mountPath: '/etc/nats', readOnly: true }] : [])],
  };
  const statefulSet: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: meta(ts, spec, 'nats'),
    spec: {
      // pod DNS names (the routes) need a headless Service; the field is immutable (docs/kubernetes.md: 1 → 3)
      serviceName: config ? routesService : name,
      replicas: spec.nats.replicas,
      ...(config ? { podManagementPolicy: 'Parallel' } : {}),
      selector: { matchLabels: labels },
      template: {
        // Not spec.version: an upgrade of the services must not restart the bus (its image is spec.nats.image).
        metadata: { labels: versionlessLabels(ts, 'nats'), ...(config ? { annotations: { [CONFIG_HASH_ANNOTATION]: hash(config) } } : {}) },
        spec: {
          securityContext: { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [container],
          ...(config
            ? {
                volumes: [{ name: 'config', configMap: { name } }],
                // one server per node where there are nodes enough: a node's loss then takes one server
                affinity: {
                  podAntiAffinity: {
                    preferredDuringSchedulingIgnoredDuringExecution: [
                      { weight: 100, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: labels } } },
                    ],
                  },
                },
              }
            : {}),
        },
      },
      volumeClaimTemplates: [
        {
          metadata: { name: 'data' },
          spec: {
            accessModes: ['ReadWriteOnce'],
            ...(spec.nats.storageClassName ? { storageClassName: spec.nats.storageClassName } : {}),
            resources: { requests: { storage: spec.nats.storage } },
          },
        },
      ],
    },
  };
  const clientService: KubeObject = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(ts, spec, 'nats'),
    spec: { type: 'ClusterIP', selector: labels, ports: [{ name: 'client', port: NATS_PORT, targetPort: 'client', protocol: 'TCP' }] },
  };
  if (!config) return [clientService, statefulSet];
  return [
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: meta(ts, spec, 'nats'), data: { 'nats.conf': config } },
    clientService,
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { ...meta(ts, spec, 'nats'), name: routesService },
      spec: {
        clusterIP: 'None',
        // a starting server must find the others before any is ready (JetStream needs a quorum to be ready)
        publishNotReadyAddresses: true,
        selector: labels,
        ports: [{ name: 'cluster', port: NATS_CLUSTER_PORT, targetPort: 'cluster', protocol: 'TCP' }],
      },
    },
    statefulSet,
    disruptionBudget(ts, spec, 'nats', pdbApiVersion),
  ];
}

function ingress(ts: TaskService, spec: TaskServiceSpec, ing: NonNullable<TaskServiceSpec['ingress']>): KubeObject {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { ...meta(ts, spec, 'gateway'), ...(ing.annotations ? { annotations: ing.annotations } : {}) },
    spec: {
      ...(ing.className ? { ingressClassName: ing.className } : {}),
      ...(ing.tlsSecretName ? { tls: [{ hosts: [ing.host], secretName: ing.tlsSecretName }] } : {}),
      rules: [
        {
          host: ing.host,
          http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: childName(ts, 'gateway'), port: { number: GATEWAY_PORT } } } }] },
        },
      ],
    },
  };
}

/**
 * A CloudNativePG Cluster; its operator writes `<name>-db-app` (key `uri`), which DATABASE_URL references.
 * deletionPolicy Retain (the default) leaves out the owner reference, so deleting the TaskService never
 * garbage-collects the database (the operator still finds it by its labels, and a TaskService of the
 * same name created again takes it back); Delete lets it go with the TaskService.
 */
function postgresCluster(ts: TaskService, spec: TaskServiceSpec, m: NonNullable<NonNullable<TaskServiceSpec['database']>['managed']>): KubeObject {
  const { ownerReferences, ...metadata } = meta(ts, spec, 'db');
  return {
    apiVersion: CNPG_API_VERSION,
    kind: 'Cluster',
    metadata: m.deletionPolicy === 'Delete' ? { ...metadata, ownerReferences } : metadata,
    spec: {
      instances: m.instances,
      storage: { size: m.storage, ...(m.storageClassName ? { storageClass: m.storageClassName } : {}) },
      bootstrap: { initdb: { database: 'tasks', owner: 'tasks' } },
    },
  };
}

/** The desired state of a whole set of TaskServices (what the cluster should hold). */
export function desiredState(list: TaskService[], opts: BuildOptions): KubeObject[] {
  return list.filter((ts) => !ts.metadata.deletionTimestamp).flatMap((ts) => desiredChildren(ts, opts));
}

/** Identity of an object across kinds and namespaces, e.g. for pruning. */
export const objectKey = (o: { kind: string; metadata: { namespace?: string; name: string } }): string =>
  `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
