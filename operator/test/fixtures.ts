/** Sample TaskServices shared by the L0 and L3 tests. */
import { API_VERSION, KIND } from '../src/crd.ts';
import type { ClusterFacts } from '../src/firewall.ts';
import type { TaskService } from '../src/types.ts';

export const secrets = {
  databaseUrl: { name: 'task-service-secrets', key: 'DATABASE_URL' },
  authSecret: { name: 'task-service-secrets', key: 'AUTH_SECRET' },
  cronSecret: { name: 'task-service-secrets', key: 'CRON_SECRET' },
};

/** The smallest valid spec: everything else comes from CRD defaults. */
export function minimal(name = 'demo', namespace = 'apps'): TaskService {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name, namespace, uid: '00000000-0000-4000-8000-000000000001', generation: 1 },
    spec: { publicUrl: 'https://tasks.example.com', secrets } as unknown as TaskService['spec'],
  };
}

/** Every optional part switched on, the firewall DaemonSet in another namespace. */
export function full(name = 'prod', namespace = 'apps'): TaskService {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name, namespace, uid: '00000000-0000-4000-8000-000000000002', generation: 3 },
    spec: {
      version: '1.4.2',
      image: { registry: 'registry.example.com/acme', pullPolicy: 'Always', pullSecrets: ['regcred'] },
      replicas: { gateway: 3, auth: 2, tasks: 2, notifier: 1, webhook: 1, scheduler: 1 },
      resources: { memory: '1Gi', cpu: '1' },
      publicUrl: 'https://tasks.example.com',
      nats: { url: 'nats://nats.messaging:4222', credentialsSecret: { name: 'nats-creds' }, image: 'nats:2.11-alpine', storage: '2Gi', replicas: 1 },
      config: { ADMIN_USER_IDS: '6f1c2a3b-0000-4000-8000-00000000000a', REQUIRE_2FA: 'true', LOG_LEVEL: 'warn' },
      secrets: {
        ...secrets,
        totpEncryptionKey: { name: 'task-service-secrets', key: 'TOTP_ENCRYPTION_KEY' },
        providers: { name: 'task-service-providers' },
        smtp: { name: 'task-service-smtp' },
        vapid: { name: 'task-service-vapid' },
      },
      cron: { schedule: '*/10 * * * *', suspend: false },
      firewall: {
        enabled: true,
        controlPlane: false,
        nodePortRange: '30000-32767',
        kubeletPort: 10250,
        namespace: 'kube-system',
        config: {
          socket_path: '/run/task-firewall/core.sock',
          data_dir: '/var/lib/task-firewall',
          log_dir: '/var/log/task-firewall',
          acceptance: { enabled: true, duration: 300 },
          firewall: { ssh_brute_force_connection_limit: 10, drop_fragments: true },
        },
      },
    },
  };
}

/** A two-node kubeadm-style cluster as the reconciler reads it (for the firewall). */
export const cluster: ClusterFacts = {
  nodes: [
    { name: 'cp-1', addresses: ['192.0.2.10'], podCIDRs: ['10.244.0.0/24'], controlPlane: true },
    { name: 'worker-1', addresses: ['192.0.2.11', '2001:db8::11'], podCIDRs: ['10.244.1.0/24'], controlPlane: false },
  ],
  apiServer: [{ ip: '192.0.2.10', port: 6443 }],
  kubeadm: { podSubnet: '10.244.0.0/16', serviceSubnet: '10.96.0.0/12' },
};
