#!/usr/bin/env node
// `node ready.ts --socket PATH`: exit 0 when the core daemon says its kernel enforces the confirmed
// rules of the configured options (Status.in_force), else print `<Reason>: <message>` and exit 1.
// The Kubernetes readiness probe of the firewall DaemonSet runs it every few seconds, so it imports
// node:net only (no config parsing, no libnftables): the kubelet records its line in the probe's
// Event, where the operator reads it for the TaskService's Firewall condition.
import { createConnection } from 'node:net';

const i = process.argv.indexOf('--socket');
const socket = i >= 0 ? process.argv[i + 1] : undefined;
if (!socket) {
  console.error('usage: ready.ts --socket PATH');
  process.exit(2);
}

const fail = (line: string): never => {
  console.log(line);
  process.exit(1);
};

const conn = createConnection(socket);
let body = '';
conn.setTimeout(4000, () => fail('Unreachable: the core daemon did not answer on its socket within 4 s'));
conn.on('error', (e) => fail(`Unreachable: cannot reach the core daemon at ${socket}: ${e.message}`));
conn.on('connect', () => conn.end(JSON.stringify({ type: 'GET_STATUS', payload: { actor: 'readiness-probe' } })));
conn.on('data', (c: Buffer) => (body += c.toString()));
conn.on('end', () => {
  let inForce: { ok?: boolean; reason?: string; message?: string } | undefined;
  try {
    inForce = (JSON.parse(body) as { data?: { in_force?: typeof inForce } }).data?.in_force;
  } catch {
    fail(`Unreachable: the core daemon's answer is not JSON: ${body.slice(0, 200)}`);
  }
  if (!inForce) fail('Unreachable: the core daemon reports no in_force (an older daemon?)');
  console.log(`${inForce!.reason}: ${inForce!.message}`);
  process.exit(inForce!.ok ? 0 : 1);
});
