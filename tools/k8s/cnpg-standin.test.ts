/**
 * The CloudNativePG stand-in's objects (cnpg-standin.ts): what the Task Service operator relies on of a
 * managed database (DATABASE_URL from `<cluster>-app` key `uri`, the `-rw` Service, a Ready condition)
 * and CloudNativePG's declarative hibernation. The stand-in itself runs in defaults-cluster.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { standInChildren, standInStatus } from './cnpg-standin.ts';

const cluster = (annotations?: Record<string, string>, instances = 1) => ({
  metadata: { name: 'tasks-db', namespace: 'tasks', uid: 'u-1', ...(annotations ? { annotations } : {}) },
  spec: { instances, storage: { size: '1Gi' }, bootstrap: { initdb: { database: 'tasks', owner: 'tasks' } } },
});
const decode = (data: Record<string, string>) => Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));

describe('CloudNativePG stand-in', () => {
  it("makes <cluster>-app with CloudNativePG's keys (uri through the -rw Service), the Service and a one-pod StatefulSet, all owned by the Cluster", () => {
    const { secret, service, statefulSet } = standInChildren(cluster(), 'pw');
    expect(decode((secret as { data: Record<string, string> }).data)).toEqual({
      username: 'tasks',
      password: 'pw',
      dbname: 'tasks',
      host: 'tasks-db-rw',
      port: '5432',
      uri: 'postgresql://tasks:pw@tasks-db-rw.tasks:5432/tasks',
    });
    for (const o of [secret, service, statefulSet]) {
      expect((o.metadata as { ownerReferences: unknown[] }).ownerReferences).toEqual([
        { apiVersion: 'postgresql.cnpg.io/v1', kind: 'Cluster', name: 'tasks-db', uid: 'u-1', controller: true, blockOwnerDeletion: true },
      ]);
    }
    expect((service.metadata as { name: string }).name).toBe('tasks-db-rw');
    expect((statefulSet.spec as { replicas: number }).replicas).toBe(1);
  });

  it('hibernation on: no pod, the volume claim kept, Ready=False; off: one pod again', () => {
    expect((standInChildren(cluster({ 'cnpg.io/hibernation': 'on' }), 'pw').statefulSet.spec as { replicas: number }).replicas).toBe(0);
    expect(standInStatus(cluster({ 'cnpg.io/hibernation': 'on' }), 1)).toMatchObject({ readyInstances: 0, conditions: [{ type: 'Ready', status: 'False' }] });
    expect((standInChildren(cluster({ 'cnpg.io/hibernation': 'off' }), 'pw').statefulSet.spec as { replicas: number }).replicas).toBe(1);
    expect(standInStatus(cluster(), 1)).toMatchObject({ readyInstances: 1, phase: 'Cluster in healthy state', conditions: [{ type: 'Ready', status: 'True' }] });
    expect(standInStatus(cluster(), 0)).toMatchObject({ conditions: [{ type: 'Ready', status: 'False' }] });
  });

  it('says it does not replicate: more than one instance is never Ready', () => {
    expect(standInStatus(cluster(undefined, 2), 1)).toMatchObject({ phase: 'Replicas not supported by the stand-in', conditions: [{ status: 'False' }] });
  });
});
