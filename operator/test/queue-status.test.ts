/** L1 pieces without I/O: the work queue's guarantees, status conditions, Lease takeover rule. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_API_TIMEOUT_SECONDS, loadOperatorConfig } from '../src/config.ts';
import { canAcquire } from '../src/leader.ts';
import { WorkQueue } from '../src/queue.ts';
import { computeStatus, databaseCondition, databaseReachability, statusChanged, transitions, type ObservedDeployment } from '../src/status.ts';

describe('WorkQueue', () => {
  it('dedupes a key queued many times, never runs one key twice at once, and reruns a key dirtied while running', async () => {
    const runs: string[] = [];
    let active = 0;
    let maxActive = 0;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const q = new WorkQueue(
      async (key) => {
        active++;
        maxActive = Math.max(maxActive, active);
        runs.push(key);
        if (runs.length === 1) await gate;
        active--;
      },
      { workers: 1 },
    );
    q.add('ns/a'); // starts at once and blocks the only worker
    q.add('ns/a'); // arrives while ns/a runs: marks it dirty, no second concurrent run
    q.add('ns/a');
    q.add('ns/b'); // waits: queued once however often it is added
    q.add('ns/b');
    q.add('ns/b');
    expect(q.length).toBe(1);
    release();
    await q.idle();
    expect(runs).toEqual(['ns/a', 'ns/b', 'ns/a']);
    expect(maxActive).toBe(1);
  });

  it('retries a failing key with exponential backoff, capped', async () => {
    const q = new WorkQueue(async () => undefined, { baseDelayMs: 100, maxDelayMs: 1000 });
    expect([1, 2, 3, 4, 5, 6].map((n) => q.backoff(n))).toEqual([100, 200, 400, 800, 1000, 1000]);
    let calls = 0;
    const errors: number[] = [];
    const failing = new WorkQueue(
      async () => {
        calls++;
        if (calls < 3) throw new Error('boom');
      },
      { baseDelayMs: 1, onError: (_k, _e, attempt) => errors.push(attempt) },
    );
    failing.add('ns/x');
    for (let i = 0; i < 200 && calls < 3; i++) await new Promise((r) => setTimeout(r, 5));
    expect(calls).toBe(3);
    expect(errors).toEqual([1, 2]);
    await failing.shutdown();
  });
});

describe('status', () => {
  const dep = (name: string, want: number, available: number, gen = 1, observed = 1): ObservedDeployment => ({
    name,
    generation: gen,
    spec: { replicas: want },
    status: { observedGeneration: observed, replicas: want, updatedReplicas: want, availableReplicas: available },
  });
  const t0 = new Date('2026-01-01T00:00:00Z');
  const t1 = new Date('2026-01-01T00:05:00Z');

  it('Ready only when every Deployment is available; lastTransitionTime moves only on a flip', () => {
    const a = computeStatus({ generation: 4, previous: undefined, deployments: [dep('x', 2, 2), dep('y', 2, 1)], now: t0 });
    expect(a.observedGeneration).toBe(4);
    expect(a.readyServices).toBe('1/2');
    expect(a.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'ServicesUnavailable', observedGeneration: 4 });
    const b = computeStatus({ generation: 4, previous: a, deployments: [dep('x', 2, 2), dep('y', 2, 1)], now: t1 });
    expect(statusChanged(a, b)).toBe(false);
    const c = computeStatus({ generation: 4, previous: b, deployments: [dep('x', 2, 2), dep('y', 2, 2)], now: t1 });
    const ready = c.conditions?.find((x) => x.type === 'Ready');
    expect(ready).toMatchObject({ status: 'True', lastTransitionTime: '2026-01-01T00:05:00Z' });
    expect(c.conditions?.find((x) => x.type === 'Degraded')?.lastTransitionTime).toBe('2026-01-01T00:00:00Z');
    expect(transitions(b, c).map((x) => `${x.type}=${x.status}`)).toEqual(['Ready=True']);
  });

  it('a rollout (maxUnavailable 0: old pods serve) is Progressing and still Ready; an error is Degraded', () => {
    const s = computeStatus({ generation: 2, previous: undefined, deployments: [dep('x', 2, 2, 3, 2)], now: t0 });
    expect(s.conditions?.find((c) => c.type === 'Progressing')?.status).toBe('True');
    expect(s.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    const short = computeStatus({ generation: 2, previous: undefined, deployments: [dep('x', 3, 2, 3, 2)], now: t0 });
    expect(short.conditions?.find((c) => c.type === 'Ready')?.status).toBe('False');
    const e = computeStatus({ generation: 2, previous: s, deployments: [], error: { reason: 'ApplyFailed', message: 'HTTP 422' }, now: t0 });
    expect(e.conditions?.find((c) => c.type === 'Degraded')).toMatchObject({ status: 'True', reason: 'ApplyFailed' });
  });

  it('a service scaled to 0 replicas is not available: Ready=False names it (issue 59 #6)', () => {
    const s = computeStatus({ generation: 1, previous: undefined, deployments: [dep('x', 2, 2), dep('gateway', 0, 0)], now: t0 });
    expect(s.readyServices).toBe('1/2');
    expect(s.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'ServicesUnavailable', message: '1 of 2 services not available: gateway (0 replicas)' });
  });

  it('Database condition from what the gateway\'s /api/health says about the database, with a managed Cluster\'s own state first (issue 59 #6)', () => {
    const url = 'http://demo-gateway.apps.svc:3000/api/health';
    expect(databaseReachability({ code: 200, status: 'ok' }, url)).toEqual({ type: 'Database', status: 'True', reason: 'Reachable', message: `the services reach the database (GET ${url} answered 200 (status ok))` });
    expect(databaseReachability({ code: 503, status: 'error' }, url)).toEqual({
      type: 'Database',
      status: 'False',
      reason: 'Unreachable',
      message: `the services cannot reach the database: GET ${url} answered 503 (status error)`,
    });
    expect(databaseReachability({ unavailable: `cannot ask ${url}: connect ECONNREFUSED` }, url)).toMatchObject({ status: 'Unknown', reason: 'NotChecked', message: expect.stringContaining('ECONNREFUSED') });
    expect(databaseReachability({ code: 404 }, url)).toMatchObject({ status: 'Unknown', reason: 'NotChecked' });
    // a managed database: a Cluster not ready stays the reason; a ready one the services cannot reach is Unreachable
    const ready = databaseCondition({ metadata: { name: 'demo-db' }, spec: { instances: 1 }, status: { readyInstances: 1 } }, true);
    const notReady = databaseCondition({ metadata: { name: 'demo-db' }, spec: { instances: 1 }, status: { readyInstances: 0 } }, true);
    expect(databaseReachability({ code: 503, status: 'error' }, url, notReady)).toEqual(notReady);
    expect(databaseReachability({ code: 503, status: 'error' }, url, ready)).toMatchObject({ status: 'False', reason: 'Unreachable', message: expect.stringContaining('Cluster demo-db: 1/1 instances ready') });
    expect(databaseReachability({ code: 200, status: 'ok' }, url, ready)).toMatchObject({ status: 'True', reason: 'ClusterReady', message: expect.stringContaining('; the services reach it (GET ') });
    expect(databaseReachability({ unavailable: 'x' }, url, ready)).toEqual(ready);
  });

  it('Database condition from the CloudNativePG Cluster status, naming the deletion policy (issue 59 #2, #6)', () => {
    const cluster = (status: unknown) => ({ metadata: { name: 'demo-db' }, spec: { instances: 2 }, status });
    expect(databaseCondition(undefined, true)).toMatchObject({ status: 'False', reason: 'ClusterMissing' });
    expect(databaseCondition(cluster({ readyInstances: 1, phase: 'Creating a new replica' }), true)).toMatchObject({
      status: 'False',
      reason: 'ClusterNotReady',
      message: 'Cluster demo-db: 1/2 instances ready, Creating a new replica; deletionPolicy Retain: deleting the TaskService keeps it',
    });
    expect(databaseCondition(cluster({ readyInstances: 2 }), false)).toMatchObject({ status: 'True', reason: 'ClusterReady', message: expect.stringContaining('deletionPolicy Delete') });
    // CloudNativePG's own Ready condition wins over the counts
    expect(databaseCondition(cluster({ readyInstances: 2, conditions: [{ type: 'Ready', status: 'False', message: 'primary unreachable' }] }), true)).toMatchObject({
      status: 'False',
      message: expect.stringContaining('(primary unreachable)'),
    });
  });

  it('statusChanged ignores key order (the API server does not keep ours)', () => {
    expect(statusChanged({ observedGeneration: 1, readyServices: '1/1' }, { readyServices: '1/1', observedGeneration: 1 })).toBe(false);
    expect(statusChanged({ observedGeneration: 1 }, { observedGeneration: 2 })).toBe(true);
  });
});

describe('Lease takeover rule', () => {
  const now = Date.parse('2026-01-01T00:00:30Z');
  const lease = (holder: string | undefined, renew: string, duration = 15) => ({ spec: { holderIdentity: holder, renewTime: renew as never, leaseDurationSeconds: duration } });
  it('takes a free or expired Lease, keeps its own, leaves a live one alone', () => {
    expect(canAcquire(lease(undefined, '2026-01-01T00:00:29Z'), 'me', now)).toBe(true);
    expect(canAcquire(lease('me', '2026-01-01T00:00:00Z'), 'me', now)).toBe(true);
    expect(canAcquire(lease('other', '2026-01-01T00:00:20Z'), 'me', now)).toBe(false);
    expect(canAcquire(lease('other', '2026-01-01T00:00:10Z'), 'me', now)).toBe(true);
  });
});

describe('operator configuration', () => {
  it('defaults every setting and refuses a bad one naming it', () => {
    expect(loadOperatorConfig({})).toMatchObject({ LEASE_DURATION_SECONDS: 15, API_TIMEOUT_SECONDS: DEFAULT_API_TIMEOUT_SECONDS, WORKERS: 2, HEALTH_PORT: 8081 });
    expect(loadOperatorConfig({ API_TIMEOUT_SECONDS: '5' }).API_TIMEOUT_SECONDS).toBe(5);
    expect(() => loadOperatorConfig({ API_TIMEOUT_SECONDS: '0' })).toThrow(/API_TIMEOUT_SECONDS/);
    expect(() => loadOperatorConfig({ API_TIMEOUT_SECONDS: 'soon' })).toThrow(/API_TIMEOUT_SECONDS: must be an integer/);
  });

  it('WATCH_NAMESPACES: unset is every namespace; a list is namespaced mode; a bad name is refused', () => {
    expect(loadOperatorConfig({}).WATCH_NAMESPACES).toBeUndefined();
    expect(loadOperatorConfig({ WATCH_NAMESPACES: '' }).WATCH_NAMESPACES).toBeUndefined();
    expect(loadOperatorConfig({ WATCH_NAMESPACES: 'team-a,team-b,team-a' }).WATCH_NAMESPACES).toEqual(['team-a', 'team-b']);
    expect(() => loadOperatorConfig({ WATCH_NAMESPACES: 'team-a, Team_B' })).toThrow(/WATCH_NAMESPACES: must be a comma-separated list/);
  });
});
