/**
 * A throwaway control plane for tests: etcd + kube-apiserver 1.20.2 (+ kube-controller-manager for
 * garbage collection and namespace deletion), all on 127.0.0.1, no kubelet. Built by
 * ensure-apiserver.sh. Run as a script (`node tools/k8s/cluster.ts`) it prints a KUBECONFIG and
 * stays up until Ctrl-C.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@tasksvc/runtime';
import { apiServerBinaries } from './bins.ts';

export interface TestCluster {
  server: string;
  token: string;
  kubeconfigPath: string;
  dir: string;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  /**
   * Controllers of kube-controller-manager to run. The default leaves out the deployment
   * controller on purpose: with no kubelet it would keep resetting Deployment status to 0 available,
   * while tests fake readiness by patching Deployment status.
   */
  controllers?: string[];
  log?: (line: string) => void;
  /** more bearer tokens, e.g. one that authenticates as a service account to test RBAC */
  users?: { token: string; name: string; groups: string[] }[];
}


/** GET from a test API server with its bearer token (self-signed certificate): status and body, status 0 when unreachable. */
export function apiGet(url: string, token: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = request(url, { headers: { authorization: `Bearer ${token}` }, rejectUnauthorized: false, timeout: 2000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', () => resolve({ status: 0, body }));
    });
    req.on('error', () => resolve({ status: 0, body: '' }));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

async function waitFor(what: string, check: () => Promise<boolean>, proc: ChildProcess, logFile: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`${what} exited with ${proc.exitCode}:\n${tail(logFile)}`);
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${what} not ready after ${timeoutMs} ms:\n${tail(logFile)}`);
}

const tail = (file: string) => {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-25).join('\n');
  } catch {
    return '(no log)';
  }
};

/**
 * The etcd of a throwaway control plane: its data in memory (/dev/shm) where the machine has it, so
 * its fsyncs never queue behind a disk the rest of a test run keeps busy. The caller removes `dataDir`.
 */
export function etcdSetup(name: string, clientPort: number, peerPort: number): { args: string[]; dataDir: string; url: string } {
  const dataDir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'tasksvc-etcd-'));
  const url = `http://127.0.0.1:${clientPort}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const args = [
    `--name=${name}`,
    `--data-dir=${dataDir}`,
    `--listen-client-urls=${url}`,
    `--advertise-client-urls=${url}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=${name}=${peerUrl}`,
  ];
  return { args, dataDir, url };
}

export async function startTestCluster(opts: ClusterOptions = {}): Promise<TestCluster> {
  const bins = apiServerBinaries();
  if (bins.missing.length) throw new Error(`missing ${bins.missing.join(', ')}: run tools/k8s/ensure-apiserver.sh`);
  const bin = bins.found as Record<'etcd' | 'kube-apiserver' | 'kube-controller-manager', string>;
  const log = opts.log ?? (() => undefined);
  const dir = mkdtempSync(join(tmpdir(), 'tasksvc-k8s-'));
  const procs: ChildProcess[] = [];
  const dirs: string[] = [];
  const run = (name: string, cmd: string, args: string[]) => {
    const file = join(dir, `${name}.log`);
    const out = createWriteStream(file);
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    p.stdout?.pipe(out);
    p.stderr?.pipe(out);
    procs.push(p);
    return { p, file };
  };
  const stop = async () => {
    for (const p of [...procs].reverse()) {
      if (p.exitCode !== null || p.signalCode !== null) continue;
      const exited = new Promise((r) => p.once('exit', r));
      p.kill('SIGTERM');
      const t = setTimeout(() => p.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    }
    for (const d of [dir, ...dirs]) rmSync(d, { recursive: true, force: true });
  };

  try {
    const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    writeFileSync(join(dir, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
    writeFileSync(join(dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
    const token = 'tasksvc-test-token';
    const extra = (opts.users ?? []).map((u, i) => `${u.token},${u.name},uid-${i},"${u.groups.join(',')}"\n`).join('');
    writeFileSync(join(dir, 'tokens.csv'), `${token},admin,admin-uid,"system:masters"\n${extra}`);
    mkdirSync(join(dir, 'certs'));

    log(`etcd on 127.0.0.1:${etcdPort}`);
    const { args: etcdArgs, dataDir: etcdDir, url: etcdUrl } = etcdSetup('test', etcdPort, peerPort);
    dirs.push(etcdDir);
    const etcd = run('etcd', bin.etcd, etcdArgs);
    await waitFor('etcd', async () => (await fetch(`${etcdUrl}/health`).then((r) => r.ok).catch(() => false)), etcd.p, etcd.file, 30_000);

    log(`kube-apiserver on 127.0.0.1:${apiPort}`);
    const server = `https://127.0.0.1:${apiPort}`;
    const api = run('kube-apiserver', bin['kube-apiserver'], [
      `--etcd-servers=${etcdUrl}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--secure-port=${apiPort}`,
      '--insecure-port=0',
      `--cert-dir=${join(dir, 'certs')}`,
      '--service-cluster-ip-range=10.96.0.0/16',
      '--service-account-issuer=https://kubernetes.default.svc',
      `--service-account-key-file=${join(dir, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
      `--token-auth-file=${join(dir, 'tokens.csv')}`,
      '--authorization-mode=RBAC',
      '--allow-privileged=true',
      '--disable-admission-plugins=ServiceAccount',
    ]);
    await waitFor('kube-apiserver', async () => (await apiGet(`${server}/readyz`, token)).status === 200, api.p, api.file, 120_000);

    const kubeconfigPath = join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfigPath,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        `- name: test\n  cluster:\n    server: ${server}\n    insecure-skip-tls-verify: true`,
        'users:',
        `- name: admin\n  user:\n    token: ${token}`,
        'contexts:',
        '- name: test\n  context:\n    cluster: test\n    user: admin\n    namespace: default',
        'current-context: test',
        '',
      ].join('\n'),
    );

    const controllers = opts.controllers ?? ['garbagecollector', 'namespace'];
    if (controllers.length) {
      log(`kube-controller-manager (${controllers.join(',')})`);
      run('kube-controller-manager', bin['kube-controller-manager'], [
        `--kubeconfig=${kubeconfigPath}`,
        '--leader-elect=false',
        `--service-account-private-key-file=${join(dir, 'sa.key')}`,
        `--controllers=${controllers.join(',')}`,
        '--secure-port=0',
        '--port=0',
      ]);
    }
    return { server, token, kubeconfigPath, dir, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const c = await startTestCluster({ log: (l) => console.log(`[k8s] ${l}`) });
  console.log(`[k8s] ready: export KUBECONFIG=${c.kubeconfigPath}   (Ctrl-C stops and deletes ${c.dir})`);
  const bye = () => void c.stop().then(() => process.exit(0));
  process.once('SIGINT', bye);
  process.once('SIGTERM', bye);
}
