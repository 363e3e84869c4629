import { specSchema } from './crd.ts';
import type { ServiceName } from './crd.ts';

export interface SecretKeyRef {
  name: string;
  key: string;
}

/** The firewall daemon's configuration file (spec/firewall-daemon.md); passed through verbatim. */
export type FirewallConfig = Record<string, unknown>;

/** TaskService.spec after the API server's structural defaulting (see crd.ts for meanings). */
export interface TaskServiceSpec {
  version: string;
  image: {
    registry: string;
    pullPolicy: 'Always' | 'IfNotPresent' | 'Never';
    pullSecrets?: string[];
    overrides?: Partial<Record<ServiceName | 'firewall', string>>;
  };
  replicas: Record<ServiceName, number>;
  /** unset: each service's default from operator/src/sizing.ts */
  resources?: { memory?: string; cpu?: string };
  serviceResources?: Partial<Record<ServiceName, { requests?: { cpu?: string; memory?: string }; limits?: { cpu?: string; memory?: string } }>>;
  publicUrl?: string;
  natsUrl?: string;
  nats: { url?: string; credentialsSecret?: { name: string }; image: string; storage: string; storageClassName?: string; replicas: 1 | 3 };
  database?: { secretKeyRef?: SecretKeyRef; managed?: { instances: number; storage: string; storageClassName?: string; deletionPolicy: 'Retain' | 'Delete' } };
  ingress?: { className?: string; host: string; tlsSecretName?: string; annotations?: Record<string, string> };
  autoscaled?: ServiceName[];
  config?: Record<string, string>;
  secrets?: {
    databaseUrl?: SecretKeyRef;
    authSecret?: SecretKeyRef;
    cronSecret?: SecretKeyRef;
    totpEncryptionKey?: SecretKeyRef;
    secretsKeyring?: SecretKeyRef;
    providers?: { name: string };
    smtp?: { name: string };
    vapid?: { name: string };
    /** false: nothing sealed before the key ring remains, so the ring services no longer get TOTP_ENCRYPTION_KEY */
    preRingValues?: boolean;
  };
  cron: { schedule: string; suspend: boolean };
  firewall: {
    enabled: boolean;
    controlPlane: boolean;
    podCIDRs?: string[];
    serviceCIDR?: string;
    nodePortRange: string;
    kubeletPort: number;
    namespace?: string;
    webPasswordSecret?: SecretKeyRef;
    config: FirewallConfig;
  };
}

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  observedGeneration?: number;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

export interface TaskServiceStatus {
  observedGeneration?: number;
  readyServices?: string;
  gatewayReplicas?: number;
  gatewaySelector?: string;
  cronJobApiVersion?: string;
  keyChecksums?: Record<string, string>;
  conditions?: Condition[];
}

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  deletionTimestamp?: string;
  finalizers?: string[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  creationTimestamp?: string;
  ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean; blockOwnerDeletion?: boolean }[];
}

export interface TaskService {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta & { namespace: string; uid: string };
  spec: TaskServiceSpec;
  status?: TaskServiceStatus;
}

/** Any Kubernetes object the operator writes: always a full desired object for server-side apply. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta & { namespace?: string };
  [field: string]: unknown;
}

type Schema = { type?: string; default?: unknown; properties?: Record<string, Schema>; items?: Schema };

/** Apply an OpenAPI schema's defaults the way the API server does (recursively, `{}` defaults included). */
export function applyDefaults(schema: Schema, value: unknown): unknown {
  const v = value === undefined && schema.default !== undefined ? structuredClone(schema.default) : value;
  if (schema.type === 'object' && schema.properties && v && typeof v === 'object' && !Array.isArray(v)) {
    const out: Record<string, unknown> = { ...(v as Record<string, unknown>) };
    for (const [k, sub] of Object.entries(schema.properties)) {
      const d = applyDefaults(sub, out[k]);
      if (d !== undefined) out[k] = d;
    }
    return out;
  }
  if (schema.type === 'array' && schema.items && Array.isArray(v)) return v.map((item) => applyDefaults(schema.items as Schema, item));
  return v;
}

/** A spec as the builders see it: defaults filled in even when the object did not pass an API server. */
export function normalizeSpec(spec: unknown): TaskServiceSpec {
  return applyDefaults(specSchema, spec) as TaskServiceSpec;
}
