/**
 * The TaskService CustomResourceDefinition: the single source of the API group, names, the structural
 * schema (defaults and bounds) and printer columns. The chart's crds/ file is generated from this
 * module (`node tools/k8s/gen-crd.ts`) and a test keeps the two identical. spec.firewall.config is
 * generated from the firewall daemon's zod schema (operator/test/crd-firewall.test.ts checks them).
 *
 * Kept free of `x-kubernetes-*` keys: @kubernetes/client-node's models silently drop hyphenated keys,
 * so a schema that relied on them would differ depending on who installed it.
 */
import { CIDR_PATTERN } from '@tasksvc/firewall/config.ts';
import { configJsonSchema } from '@tasksvc/firewall/json-schema.ts';
import { DEFAULT_REPLICAS, POD_LIMITS } from './sizing.ts';

export const GROUP = 'tasks.example.io';
export const VERSION = 'v1alpha1';
export const KIND = 'TaskService';
export const PLURAL = 'taskservices';
export const SINGULAR = 'taskservice';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const CRD_NAME = `${PLURAL}.${GROUP}`;
/** Longest TaskService name whose derived names stay within Kubernetes limits (CronJob names: 52). */
export const MAX_NAME_LENGTH = 42;

/** The six application processes, each its own Deployment (entry point services/<name>/src/main.ts). */
export const SERVICES = ['gateway', 'auth', 'tasks', 'notifier', 'webhook', 'scheduler'] as const;
export type ServiceName = (typeof SERVICES)[number];

type Schema = Record<string, unknown>;

const str = (extra: Schema = {}): Schema => ({ type: 'string', ...extra });
const bool = (def: boolean, description?: string): Schema => ({ type: 'boolean', default: def, ...(description ? { description } : {}) });
const int = (def: number, minimum: number, maximum?: number, description?: string): Schema => ({
  type: 'integer',
  default: def,
  minimum,
  ...(maximum === undefined ? {} : { maximum }),
  ...(description ? { description } : {}),
});
/** An object whose absence still yields its inner defaults (the API server defaults `{}` recursively). */
const section = (properties: Record<string, Schema>, description?: string): Schema => ({
  type: 'object',
  default: {},
  ...(description ? { description } : {}),
  properties,
});

/** Five cron fields (digits, *, ranges, steps, lists, names) or a @macro. */
const CRON = '^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|([0-9A-Za-z*/,?-]+\\s+){4}[0-9A-Za-z*/,?-]+)$';
const QUANTITY = '^([+]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$';

const secretKeyRef = (defaultKey: string, description: string): Schema => ({
  type: 'object',
  description: `${description} (a key of a Secret in the TaskService's namespace)`,
  required: ['name'],
  properties: {
    name: str({ minLength: 1, maxLength: 253 }),
    key: str({ default: defaultKey, minLength: 1, maxLength: 253 }),
  },
});

const secretName = (keys: string, description: string): Schema => ({
  type: 'object',
  description: `${description}; the whole Secret is passed as environment (${keys}). Optional.`,
  required: ['name'],
  properties: { name: str({ minLength: 1, maxLength: 253 }) },
});

/** Where the DaemonSet keeps the daemon's files unless spec.firewall.config names others (the file itself requires them). */
export const FIREWALL_PATH_DEFAULTS = {
  socket_path: '/run/task-firewall/core.sock',
  data_dir: '/var/lib/task-firewall',
  log_dir: '/var/log/task-firewall',
} as const;

/**
 * The daemon's JSON Schema made structural: without `additionalProperties` (not allowed beside
 * `properties`; the API server prunes unknown keys instead), without `required` (the operator
 * defaults the paths) and without zod's safe-integer bounds, which are no bound of the spec.
 */
function structural(node: Schema): Schema {
  const out: Schema = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === '$schema' || key === 'additionalProperties' || key === 'required') continue;
    if ((key === 'maximum' && value === Number.MAX_SAFE_INTEGER) || (key === 'minimum' && value === Number.MIN_SAFE_INTEGER)) continue;
    if (key === 'properties') out[key] = Object.fromEntries(Object.entries(value as Record<string, Schema>).map(([k, v]) => [k, structural(v)]));
    else if (key === 'items') out[key] = structural(value as Schema);
    else out[key] = value;
  }
  return out;
}

/** spec.firewall.config: generated from the daemon's zod schema (services/firewall/src/config.ts), so the two cannot drift. */
export const firewallConfigSchema: Schema = (() => {
  const schema = structural(configJsonSchema());
  const properties = schema.properties as Record<string, Schema>;
  for (const [key, path] of Object.entries(FIREWALL_PATH_DEFAULTS)) properties[key] = { ...properties[key], default: path };
  return { ...schema, description: 'The firewall daemon configuration file (spec: Firewall Daemon Configuration). Unknown keys are pruned.', default: {} };
})();

const replicas = Object.fromEntries(SERVICES.map((s) => [s, int(DEFAULT_REPLICAS, 0, 100, `${s} replicas`)]));

export const specSchema: Schema = {
  type: 'object',
  properties: {
    version: str({
      default: 'latest',
      pattern: '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$',
      description: 'image tag of every component (e.g. 1.4.2, 1.4, sha-abc1234, latest)',
    }),
    image: section({
      registry: str({
        default: 'ghcr.io/task-service',
        minLength: 1,
        maxLength: 200,
        description: 'registry and namespace; a component image is <registry>/task-service-<component>:<version> (as released)',
      }),
      pullPolicy: str({ default: 'IfNotPresent', enum: ['Always', 'IfNotPresent', 'Never'] }),
      pullSecrets: { type: 'array', maxItems: 10, items: str({ minLength: 1, maxLength: 253 }) },
      overrides: {
        type: 'object',
        description: 'full image references per component, winning over registry and version (used by skaffold)',
        properties: Object.fromEntries([...SERVICES, 'firewall'].map((c) => [c, str({ minLength: 1, maxLength: 512 })])),
      },
    }),
    replicas: section(replicas, 'replicas per service (the spec example runs 2 of each)'),
    // No defaults here: an unset spec.resources is what lets each service get its own requests
    // (operator/src/sizing.ts defaultResources), which a defaulted pair would hide.
    resources: {
      type: 'object',
      description: `one memory and CPU pair for every pod, request = limit (Guaranteed QoS; a part left out is ${POD_LIMITS.memory} or ${POD_LIMITS.cpu}). Unset: each service gets its own requests from the sizing bench, limits ${POD_LIMITS.memory} and ${POD_LIMITS.cpu} (Burstable; docs/kubernetes.md "Sizing")`,
      properties: {
        memory: str({ pattern: QUANTITY, description: 'memory request and limit per pod' }),
        cpu: str({ pattern: QUANTITY, description: 'CPU request and limit per pod' }),
      },
    },
    serviceResources: {
      type: 'object',
      description: 'per-service ResourceRequirements (requests and limits of cpu and memory), used as given for that service instead of spec.resources or its default',
      properties: Object.fromEntries(
        SERVICES.map((s) => {
          const pair: Schema = { type: 'object', properties: { cpu: str({ pattern: QUANTITY }), memory: str({ pattern: QUANTITY }) } };
          return [s, { type: 'object', properties: { requests: pair, limits: pair } }];
        }),
      ),
    },
    publicUrl: str({
      pattern: '^https?://[^/]+',
      maxLength: 2048,
      description: 'PUBLIC_APP_URL (also the default AUTH_CALLBACK_URL); derived from spec.ingress when unset',
    }),
    natsUrl: str({ pattern: '^(nats|tls|ws|wss)://', maxLength: 2048, description: 'deprecated: spec.nats.url' }),
    nats: section(
      {
        url: str({ pattern: '^(nats|tls|ws|wss)://', maxLength: 2048, description: 'an existing NATS server with JetStream; unset: the operator runs one' }),
        credentialsSecret: secretName('NATS_USER, NATS_PASSWORD or NATS_TOKEN, NATS_CREDS_FILE', 'credentials of the existing server'),
        image: str({ default: 'nats:2.11-alpine', minLength: 1, maxLength: 512, description: 'image of the operator-run server (the official nats image)' }),
        storage: str({ default: '2Gi', pattern: QUANTITY, description: 'JetStream volume of the operator-run server' }),
        storageClassName: str({ maxLength: 253 }),
        replicas: {
          type: 'integer',
          default: 1,
          enum: [1, 3],
          description: 'servers of the operator-run NATS: 3 forms a JetStream cluster (streams kept on 3 servers, a PodDisruptionBudget) that survives the loss of one',
        },
      },
      'the bus: an existing NATS server (url + credentialsSecret), or one the operator runs (StatefulSet, JetStream, user/password auth)',
    ),
    database: {
      type: 'object',
      description: 'PostgreSQL: a Secret key holding DATABASE_URL (CloudNativePG: <cluster>-app, key uri), or a managed CloudNativePG Cluster',
      properties: {
        secretKeyRef: secretKeyRef('uri', 'DATABASE_URL'),
        managed: {
          type: 'object',
          description: 'create a CloudNativePG Cluster <name>-db (needs the CloudNativePG operator installed)',
          properties: {
            instances: int(1, 1, 9, 'PostgreSQL instances (1 primary + replicas)'),
            storage: str({ default: '10Gi', pattern: QUANTITY }),
            storageClassName: str({ maxLength: 253 }),
            deletionPolicy: str({
              default: 'Retain',
              enum: ['Retain', 'Delete'],
              description: 'Retain: deleting the TaskService keeps the Cluster and its volumes (delete them yourself); Delete: they go with it',
            }),
          },
        },
      },
    },
    ingress: {
      type: 'object',
      description: 'an Ingress to the gateway; PUBLIC_APP_URL becomes https://<host> (http:// without tlsSecretName)',
      required: ['host'],
      properties: {
        className: str({ maxLength: 253 }),
        host: str({ minLength: 1, maxLength: 253, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$' }),
        tlsSecretName: str({ minLength: 1, maxLength: 253, description: 'a kubernetes.io/tls Secret (e.g. from cert-manager)' }),
        annotations: { type: 'object', maxProperties: 50, additionalProperties: { type: 'string', maxLength: 4096 } },
      },
    },
    autoscaled: {
      type: 'array',
      maxItems: SERVICES.length,
      description: 'services whose replicas an HorizontalPodAutoscaler owns: the operator leaves their spec.replicas alone',
      items: str({ enum: [...SERVICES] }),
    },
    config: {
      type: 'object',
      description: 'non-secret environment variables for every service (e.g. RUNTIME_ENV, ADMIN_USER_IDS, REQUIRE_2FA)',
      maxProperties: 100,
      additionalProperties: { type: 'string', maxLength: 4096 },
    },
    secrets: {
      type: 'object',
      description: 'references to Secrets in the same namespace; AUTH_SECRET, CRON_SECRET, TOTP_ENCRYPTION_KEY and SECRETS_KEYRING left unset are generated into <name>-generated',
      properties: {
        databaseUrl: secretKeyRef('DATABASE_URL', 'DATABASE_URL (or spec.database)'),
        authSecret: secretKeyRef('AUTH_SECRET', 'AUTH_SECRET'),
        cronSecret: secretKeyRef('CRON_SECRET', 'CRON_SECRET, sent by the cron job as a bearer token'),
        totpEncryptionKey: secretKeyRef('TOTP_ENCRYPTION_KEY', 'TOTP_ENCRYPTION_KEY'),
        secretsKeyring: secretKeyRef('SECRETS_KEYRING', 'SECRETS_KEYRING (<id>:<64 hex>, first seals, all open); read by the operator only, which gives the webhook and notifier each its own derived ring'),
        providers: secretName('CODEHOST_CLIENT_ID, CODEHOST_CLIENT_SECRET, …, OIDC_ISSUER', 'identity provider credentials'),
        smtp: secretName('SMTP_HOST, SMTP_PORT, SMTP_USER, SMTP_PASS, SMTP_FROM, SMTP_SECURE', 'SMTP settings'),
        vapid: secretName('PUBLIC_VAPID_PUBLIC_KEY, VAPID_PRIVATE_KEY, VAPID_CONTACT', 'browser push keys'),
        preRingValues: {
          type: 'boolean',
          description:
            'false once `tools/keys.ts status` says "pre-ring values: none": the webhook and notifier Deployments then no longer get TOTP_ENCRYPTION_KEY (they need it only to open values stored before the key ring); unset means true',
        },
      },
    },
    cron: section({
      schedule: str({ default: '*/5 * * * *', pattern: CRON, maxLength: 100, description: 'schedule of POST /api/cron (five fields, or @hourly etc.)' }),
      suspend: bool(false),
    }),
    firewall: section({
      enabled: bool(false, 'run the firewall daemon on every node (privileged, host network); one TaskService per cluster'),
      controlPlane: bool(false, 'also run on control-plane nodes (then the API server port is opened to every source)'),
      podCIDRs: {
        type: 'array',
        maxItems: 16,
        description: 'pod networks, when neither the nodes (spec.podCIDRs) nor kubeadm-config name them (e.g. Calico IPAM)',
        items: str({ pattern: CIDR_PATTERN }),
      },
      serviceCIDR: str({ pattern: CIDR_PATTERN, description: 'service network, when kubeadm-config does not name it' }),
      nodePortRange: str({ default: '30000-32767', pattern: '^[0-9]{1,5}([-:][0-9]{1,5})?$', description: 'opened to every source (TCP and UDP)' }),
      kubeletPort: int(10250, 1, 65535, 'must stay reachable after an apply (FIREWALL_SELF_CONFIRM)'),
      namespace: str({
        maxLength: 63,
        pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
        description: "namespace of the DaemonSet; defaults to the TaskService's own (another namespace is cleaned up by a finalizer)",
      }),
      webPasswordSecret: secretKeyRef('FIREWALL_WEB_PASSWORD', 'password of the firewall web component'),
      config: firewallConfigSchema,
    }),
  },
};

const conditionSchema: Schema = {
  type: 'object',
  required: ['type', 'status', 'lastTransitionTime', 'reason', 'message'],
  properties: {
    type: str({ maxLength: 316 }),
    status: str({ enum: ['True', 'False', 'Unknown'] }),
    observedGeneration: { type: 'integer', format: 'int64', minimum: 0 },
    lastTransitionTime: str({ format: 'date-time' }),
    reason: str({ maxLength: 1024 }),
    message: str({ maxLength: 32768 }),
  },
};

export const statusSchema: Schema = {
  type: 'object',
  properties: {
    observedGeneration: { type: 'integer', format: 'int64' },
    readyServices: str({ description: 'ready Deployments out of all, e.g. 6/6' }),
    gatewayReplicas: { type: 'integer', format: 'int32', minimum: 0, description: 'gateway pods (the /scale subresource reports it)' },
    gatewaySelector: str({ description: "the gateway pods' label selector (for a HorizontalPodAutoscaler through /scale)" }),
    cronJobApiVersion: str(),
    keyChecksums: {
      type: 'object',
      description: 'SHA-256 prefix of each generated key (never the value): a key that goes missing or changes is noticed and never silently regenerated',
      additionalProperties: str({ maxLength: 64 }),
    },
    conditions: { type: 'array', items: conditionSchema },
  },
};

/** The CRD as a plain object (apiextensions.k8s.io/v1; Kubernetes >= 1.16). */
export function customResourceDefinition(): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: CRD_NAME, labels: { 'app.kubernetes.io/part-of': 'task-service' } },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: { kind: KIND, listKind: `${KIND}List`, plural: PLURAL, singular: SINGULAR, shortNames: ['tsvc'], categories: ['all'] },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          // /scale scales the gateway (kubectl scale tsvc, or an HPA targeting the TaskService).
          subresources: {
            status: {},
            scale: { specReplicasPath: '.spec.replicas.gateway', statusReplicasPath: '.status.gatewayReplicas', labelSelectorPath: '.status.gatewaySelector' },
          },
          additionalPrinterColumns: [
            { name: 'Version', type: 'string', jsonPath: '.spec.version' },
            { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
            { name: 'Services', type: 'string', jsonPath: '.status.readyServices' },
            { name: 'URL', type: 'string', jsonPath: '.spec.publicUrl', priority: 1 },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: 'A Task Service installation: its services, cron job and optional firewall daemon.',
              required: ['spec'],
              properties: {
                apiVersion: str(),
                kind: str(),
                // 1.20 allows restricting metadata.name: longer names would break derived child names.
                metadata: { type: 'object', properties: { name: str({ maxLength: MAX_NAME_LENGTH }) } },
                spec: specSchema,
                status: statusSchema,
              },
            },
          },
        },
      ],
    },
  };
}
