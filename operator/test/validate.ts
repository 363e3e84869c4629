/**
 * Kubernetes schema checks for rendered objects (L0 and chart tests): kubernetes-models' OpenAPI
 * validation (types, required fields) plus what it misses: unknown-field-free names, DNS rules.
 */
import { ClusterRole } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole';
import { ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding';
import { Role } from 'kubernetes-models/rbac.authorization.k8s.io/v1/Role';
import { RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding';
import { CustomResourceDefinition } from 'kubernetes-models/apiextensions.k8s.io/v1/CustomResourceDefinition';
import { DaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { Ingress } from 'kubernetes-models/networking.k8s.io/v1/Ingress';
import { CronJob } from 'kubernetes-models/batch/v1/CronJob';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Service } from 'kubernetes-models/v1/Service';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';

type Validatable = { validate(): void };
const models: Record<string, new (data: never) => Validatable> = {
  'rbac.authorization.k8s.io/v1/ClusterRole': ClusterRole,
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': ClusterRoleBinding,
  'rbac.authorization.k8s.io/v1/Role': Role,
  'rbac.authorization.k8s.io/v1/RoleBinding': RoleBinding,
  'apiextensions.k8s.io/v1/CustomResourceDefinition': CustomResourceDefinition,
  'apps/v1/DaemonSet': DaemonSet,
  'apps/v1/Deployment': Deployment,
  'apps/v1/StatefulSet': StatefulSet,
  'networking.k8s.io/v1/Ingress': Ingress,
  'batch/v1/CronJob': CronJob,
  'v1/ConfigMap': ConfigMap,
  'v1/Service': Service,
  'v1/ServiceAccount': ServiceAccount,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
};

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** Problems found in one object; empty when valid. `batch/v1beta1` CronJobs are checked as batch/v1. */
export function validateObject(obj: { apiVersion: string; kind: string; metadata?: { name?: string; labels?: Record<string, string> } } & Record<string, unknown>): string[] {
  const problems: string[] = [];
  // the beta shapes of CronJob and PodDisruptionBudget (Kubernetes 1.20) are the v1 ones for what the operator writes
  const apiVersion = obj.apiVersion === 'batch/v1beta1' && obj.kind === 'CronJob' ? 'batch/v1' : obj.apiVersion === 'policy/v1beta1' ? 'policy/v1' : obj.apiVersion;
  const Model = models[`${apiVersion}/${obj.kind}`];
  const id = `${obj.kind}/${obj.metadata?.name}`;
  if (!Model) return [`${id}: no schema for ${obj.apiVersion} ${obj.kind}`];
  try {
    new Model({ ...obj, apiVersion } as never).validate();
  } catch (err) {
    problems.push(`${id}: ${(err as Error).message}`);
  }
  const name = obj.metadata?.name ?? '';
  const clusterScopedRbac = obj.kind.startsWith('Cluster') || obj.kind === 'CustomResourceDefinition' || obj.kind.endsWith('Role') || obj.kind.endsWith('RoleBinding');
  if (!clusterScopedRbac && !DNS_SUBDOMAIN.test(name)) problems.push(`${id}: name is not a DNS subdomain`);
  if (obj.kind === 'Service' && !(DNS_LABEL.test(name) && name.length <= 63)) problems.push(`${id}: Service name must be a DNS label <= 63`);
  if (obj.kind === 'CronJob' && name.length > 52) problems.push(`${id}: CronJob name longer than 52`);
  if (name.length > 253) problems.push(`${id}: name longer than 253`);
  for (const [k, v] of Object.entries(obj.metadata?.labels ?? {})) {
    if (v.length > 63 || !LABEL_VALUE.test(v)) problems.push(`${id}: label ${k}=${v} is not a valid label value`);
  }
  return problems;
}
