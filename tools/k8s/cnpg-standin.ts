/**
 * A STAND-IN for CloudNativePG on the one-node cluster (no registry here, so the real operator cannot
 * run; issue 59 accepts a named stand-in). It serves the `clusters.postgresql.cnpg.io` kind (a minimal
 * CRD) and, for each Cluster, owns what CloudNativePG would create and what the Task Service operator
 * relies on (operator/src/desired.ts postgresCluster, status.ts databaseCondition):
 *   - Secret `<cluster>-app` (type kubernetes.io/basic-auth; username, password, dbname, host, port, uri):
 *     the operator points DATABASE_URL at its key `uri`; made once and never changed;
 *   - Service `<cluster>-rw` (the primary's address, in `uri`);
 *   - a one-pod StatefulSet `<cluster>` running Debian's PostgreSQL 15 (postgres.Containerfile) on a claim
 *     of the default StorageClass (the cluster's local volumes); more instances are not replicated: the
 *     status says so;
 *   - status: instances, readyInstances, phase and a `Ready` condition, as CloudNativePG reports them.
 * Every child carries an owner reference to its Cluster (deleting the Cluster deletes them, as with
 * CloudNativePG; a Cluster kept by deletionPolicy Retain keeps them). The annotation
 * `cnpg.io/hibernation: "on"` (CloudNativePG's declarative hibernation) stops the pod and keeps the
 * volume; "off" or removing it starts it again: how the cluster test takes the database away.
 *
 * It runs in the test process and polls the API server (no watch: a handful of objects, once a second).
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:https';
import { POSTGRES_IMAGE } from './images.ts';
import type { NodeCluster } from './node.ts';

export const CNPG_GROUP = 'postgresql.cnpg.io';
export const HIBERNATION_ANNOTATION = 'cnpg.io/hibernation';
const STANDIN_LABEL = 'task-service.test/cnpg-standin';
const PG_PORT = 5432;

/** The minimal CRD: CloudNativePG's names and version, any spec, a status subresource. */
export const cnpgCrd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `clusters.${CNPG_GROUP}`, labels: { [STANDIN_LABEL]: 'true' } },
  spec: {
    group: CNPG_GROUP,
    scope: 'Namespaced',
    names: { plural: 'clusters', singular: 'cluster', kind: 'Cluster', listKind: 'ClusterList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      },
    ],
  },
};

interface Cluster {
  metadata: { name: string; namespace: string; uid: string; annotations?: Record<string, string>; deletionTimestamp?: string };
  spec?: { instances?: number; storage?: { size?: string; storageClass?: string }; bootstrap?: { initdb?: { database?: string; owner?: string } } };
  status?: Record<string, unknown>;
}

type Api = (method: string, path: string, body?: unknown, contentType?: string) => Promise<{ status: number; body: string }>;

/** A request to the cluster's API server with its admin token (self-signed certificate). */
export function apiClient(cluster: Pick<NodeCluster, 'server' | 'token'>): Api {
  return (method, path, body, contentType = 'application/json') =>
    new Promise((resolve) => {
      const data = body === undefined ? undefined : JSON.stringify(body);
      const req = request(
        `${cluster.server}${path}`,
        {
          method,
          rejectUnauthorized: false,
          timeout: 5000,
          headers: { authorization: `Bearer ${cluster.token}`, accept: 'application/json', ...(data ? { 'content-type': contentType } : {}) },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
          res.on('error', () => resolve({ status: 0, body: text }));
        },
      );
      req.on('error', () => resolve({ status: 0, body: '' }));
      req.on('timeout', () => req.destroy());
      req.end(data);
    });
}

/** The children of one Cluster (the Secret only when it does not exist yet: its password is made once). */
export function standInChildren(c: Cluster, password: string): { secret: Record<string, unknown>; service: Record<string, unknown>; statefulSet: Record<string, unknown> } {
  const { name, namespace, uid } = c.metadata;
  const db = c.spec?.bootstrap?.initdb?.database ?? 'app';
  const user = c.spec?.bootstrap?.initdb?.owner ?? db;
  const host = `${name}-rw`;
  const labels = { 'cnpg.io/cluster': name, [STANDIN_LABEL]: 'true' };
  const owner = [{ apiVersion: `${CNPG_GROUP}/v1`, kind: 'Cluster', name, uid, controller: true, blockOwnerDeletion: true }];
  const meta = (n: string) => ({ name: n, namespace, labels, ownerReferences: owner });
  const hibernated = c.metadata.annotations?.[HIBERNATION_ANNOTATION] === 'on';
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  return {
    secret: {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/basic-auth',
      metadata: meta(`${name}-app`),
      data: {
        username: b64(user),
        password: b64(password),
        dbname: b64(db),
        host: b64(host),
        port: b64(String(PG_PORT)),
        uri: b64(`postgresql://${user}:${password}@${host}.${namespace}:${PG_PORT}/${db}`),
      },
    },
    service: {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(host),
      spec: { type: 'ClusterIP', selector: { 'cnpg.io/cluster': name }, ports: [{ name: 'postgres', port: PG_PORT, targetPort: PG_PORT, protocol: 'TCP' }] },
    },
    statefulSet: {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: meta(name),
      spec: {
        serviceName: host,
        replicas: hibernated ? 0 : 1,
        selector: { matchLabels: { 'cnpg.io/cluster': name } },
        template: {
          metadata: { labels },
          spec: {
            terminationGracePeriodSeconds: 10,
            containers: [
              {
                name: 'postgres',
                image: POSTGRES_IMAGE,
                imagePullPolicy: 'Never',
                env: [
                  { name: 'POSTGRES_USER', value: user },
                  { name: 'POSTGRES_DB', value: db },
                  { name: 'POSTGRES_PASSWORD', valueFrom: { secretKeyRef: { name: `${name}-app`, key: 'password' } } },
                ],
                ports: [{ name: 'postgres', containerPort: PG_PORT, protocol: 'TCP' }],
                // Checked often, so a started database is found Ready at once, but taken out of its Service only
                // after three failures, as CloudNativePG does: on a loaded node one `pg_isready` exec can outlast
                // the kubelet's 1 s default (seen during a rollout), and a single miss empties `-rw` for a probe
                // period, refusing the new connections of the pods then starting (the likely cause of two 503s).
                readinessProbe: { exec: { command: ['pg_isready', '-h', '127.0.0.1', '-p', String(PG_PORT)] }, periodSeconds: 2, timeoutSeconds: 5, failureThreshold: 3 },
                resources: { requests: { memory: '128Mi', cpu: '100m' }, limits: { memory: '512Mi' } },
                volumeMounts: [{ name: 'pgdata', mountPath: '/var/lib/postgresql/data' }],
              },
            ],
          },
        },
        volumeClaimTemplates: [
          {
            metadata: { name: 'pgdata' },
            spec: {
              accessModes: ['ReadWriteOnce'],
              ...(c.spec?.storage?.storageClass ? { storageClassName: c.spec.storage.storageClass } : {}),
              resources: { requests: { storage: c.spec?.storage?.size ?? '1Gi' } },
            },
          },
        ],
      },
    },
  };
}

/** Status as CloudNativePG writes it, from the StatefulSet's ready pods. */
export function standInStatus(c: Cluster, readyPods: number): Record<string, unknown> {
  const want = c.spec?.instances ?? 1;
  const hibernated = c.metadata.annotations?.[HIBERNATION_ANNOTATION] === 'on';
  const ready = !hibernated && readyPods >= 1 && want <= 1;
  const phase = hibernated ? 'Cluster in hibernation (stand-in)' : ready ? 'Cluster in healthy state' : want > 1 ? 'Replicas not supported by the stand-in' : 'Setting up primary';
  return {
    instances: want,
    readyInstances: hibernated ? 0 : Math.min(readyPods, 1),
    phase,
    writeService: `${c.metadata.name}-rw`,
    conditions: [
      {
        type: 'Ready',
        status: ready ? 'True' : 'False',
        reason: ready ? 'ClusterIsReady' : 'ClusterIsNotReady',
        message: ready ? 'Cluster is Ready (CloudNativePG stand-in)' : `${phase} (CloudNativePG stand-in)`,
        lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      },
    ],
  };
}

export interface CnpgStandIn {
  /** one pass over every Cluster (also run every second until stop) */
  once(): Promise<void>;
  stop(): void;
}

/** Installs the CRD and keeps every Cluster's children and status in step, polling once a second. */
export async function startCnpgStandIn(cluster: Pick<NodeCluster, 'server' | 'token'>, log: (l: string) => void = () => undefined): Promise<CnpgStandIn> {
  const api = apiClient(cluster);
  const crd = await api('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', cnpgCrd);
  if (crd.status !== 201 && crd.status !== 409) throw new Error(`CloudNativePG stand-in: the CRD was refused: ${crd.status} ${crd.body}`);
  for (let i = 0; ; i++) {
    const r = await api('GET', `/apis/${CNPG_GROUP}/v1/clusters`);
    if (r.status === 200) break;
    if (i > 200) throw new Error(`CloudNativePG stand-in: the Cluster kind is not served: ${r.status} ${r.body}`);
    await new Promise((res) => setTimeout(res, 100));
  }
  const lastStatus = new Map<string, string>();
  const apply = async (obj: Record<string, unknown>, plural: string, group = '') => {
    const m = obj.metadata as { name: string; namespace: string };
    const base = group ? `/apis/${group}/namespaces/${m.namespace}/${plural}` : `/api/v1/namespaces/${m.namespace}/${plural}`;
    const r = await api('PATCH', `${base}/${m.name}?fieldManager=cnpg-standin&force=true`, obj, 'application/apply-patch+yaml');
    if (r.status >= 300) log(`apply ${plural}/${m.name}: ${r.status} ${r.body.slice(0, 300)}`);
  };
  let busy = false;
  const once = async () => {
    if (busy) return;
    busy = true;
    try {
      const list = await api('GET', `/apis/${CNPG_GROUP}/v1/clusters`);
      if (list.status !== 200) return;
      for (const c of (JSON.parse(list.body) as { items: Cluster[] }).items) {
        if (c.metadata.deletionTimestamp) continue;
        const { name, namespace } = c.metadata;
        const secretPath = `/api/v1/namespaces/${namespace}/secrets/${name}-app`;
        const existing = await api('GET', secretPath);
        const children = standInChildren(c, randomBytes(18).toString('base64url'));
        if (existing.status === 404) {
          const r = await api('POST', `/api/v1/namespaces/${namespace}/secrets`, children.secret);
          if (r.status === 201) log(`Cluster ${namespace}/${name}: Secret ${name}-app created`);
        }
        await apply(children.service, 'services');
        await apply(children.statefulSet, 'statefulsets', 'apps/v1');
        const sts = await api('GET', `/apis/apps/v1/namespaces/${namespace}/statefulsets/${name}`);
        const readyPods = sts.status === 200 ? ((JSON.parse(sts.body) as { status?: { readyReplicas?: number } }).status?.readyReplicas ?? 0) : 0;
        const status = standInStatus(c, readyPods);
        const summary = `${String(status.phase)}/${String(status.readyInstances)}`;
        if (lastStatus.get(`${namespace}/${name}`) === summary && c.status?.phase === status.phase) continue;
        const r = await api('PATCH', `/apis/${CNPG_GROUP}/v1/namespaces/${namespace}/clusters/${name}/status`, { status }, 'application/merge-patch+json');
        if (r.status === 200) {
          lastStatus.set(`${namespace}/${name}`, summary);
          log(`Cluster ${namespace}/${name}: ${summary}`);
        }
      }
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void once().catch((e: Error) => log(`pass failed: ${e.message}`)), 1000);
  timer.unref();
  return { once, stop: () => clearInterval(timer) };
}
