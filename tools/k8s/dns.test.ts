/**
 * The one-node cluster's DNS (dns.ts): the records made from Services and Endpoints, and Debian's
 * dnsmasq answering them with the cluster's arguments (on loopback and a free port here; the cluster runs it
 * on the pod bridge's gateway, port 53): a name of the file resolves, an unknown name in the cluster
 * domain is NXDOMAIN (a resolver then walks on through the pod's search list), a change is served
 * after the reload, and a removed name is gone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { Resolver } from 'node:dns/promises';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '@tasksvc/runtime';
import { eventually } from '../testenv/wait.ts';
import { clusterDnsHosts, dnsmasqArgs } from './dns.ts';
import { skipOrFail } from './images.ts';

const services = {
  items: [
    { metadata: { name: 'task-service-nats', namespace: 'tasks' }, spec: { clusterIP: '10.96.0.20' } },
    { metadata: { name: 'task-service-nats-routes', namespace: 'tasks' }, spec: { clusterIP: 'None', publishNotReadyAddresses: true } },
    { metadata: { name: 'task-service-auth', namespace: 'tasks' }, spec: { clusterIP: 'None' } },
  ],
};
const endpoints = {
  items: [
    { metadata: { name: 'task-service-nats-routes', namespace: 'tasks' }, subsets: [{ notReadyAddresses: [{ ip: '10.89.80.7', hostname: 'task-service-nats-0' }] }] },
    { metadata: { name: 'task-service-auth', namespace: 'tasks' }, subsets: [{ addresses: [{ ip: '10.89.80.5' }], notReadyAddresses: [{ ip: '10.89.80.6' }] }] },
  ],
};

describe('cluster DNS records', () => {
  it('a cluster IP per Service; a headless Service its ready endpoints (not-ready ones when it publishes them) and its pods by hostname', () => {
    expect(clusterDnsHosts(services, endpoints).trim().split('\n')).toEqual([
      '10.89.80.5 task-service-auth.tasks.svc.cluster.local',
      '10.89.80.7 task-service-nats-0.task-service-nats-routes.tasks.svc.cluster.local',
      '10.89.80.7 task-service-nats-routes.tasks.svc.cluster.local',
      '10.96.0.20 task-service-nats.tasks.svc.cluster.local',
    ]);
  });
});

const hasDnsmasq = await new Promise<boolean>((resolve) => spawn('dnsmasq', ['--version']).once('error', () => resolve(false)).once('exit', (code) => resolve(code === 0)));
const skip = skipOrFail(hasDnsmasq ? '' : 'dnsmasq is not installed (apt-get install dnsmasq-base)');

describe.skipIf(skip)("dnsmasq with the cluster's arguments", () => {
  const dir = mkdtempSync(join(tmpdir(), 'cluster-dns-'));
  let dnsmasq: ChildProcess | undefined;
  afterAll(() => {
    dnsmasq?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers the names of its file, NXDOMAIN for others in the domain, and follows a change after SIGHUP', async () => {
    const hosts = join(dir, 'hosts');
    writeFileSync(hosts, clusterDnsHosts(services, endpoints));
    const port = await freePort();
    let out = '';
    dnsmasq = spawn('dnsmasq', dnsmasqArgs('127.0.0.1', hosts, join(dir, 'pid'), port), { stdio: ['ignore', 'pipe', 'pipe'] });
    dnsmasq.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    const resolver = new Resolver({ timeout: 1000, tries: 1 });
    resolver.setServers([`127.0.0.1:${port}`]);
    const lookup = (name: string) => resolver.resolve4(name).catch((e: NodeJS.ErrnoException) => e.code ?? 'error');
    expect(await eventually(`dnsmasq answering (${out})`, async () => (await resolver.resolve4('task-service-nats.tasks.svc.cluster.local'))[0])).toBe('10.96.0.20');
    expect(await lookup('task-service-nats.tasks.svc.tasks.svc.cluster.local')).toBe('ENOTFOUND');
    writeFileSync(hosts, clusterDnsHosts({ items: [{ metadata: { name: 'task-service-nats', namespace: 'tasks' }, spec: { clusterIP: '10.96.0.21' } }] }, { items: [] }));
    dnsmasq.kill('SIGHUP');
    await eventually('the new address served', async () => (await lookup('task-service-nats.tasks.svc.cluster.local')).toString() === '10.96.0.21');
    expect(await lookup('task-service-auth.tasks.svc.cluster.local')).toBe('ENOTFOUND');
  });
});
