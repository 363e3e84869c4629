/**
 * Writes the chart's CRD file from operator/src/crd.ts (the single source). A test fails when the
 * committed file is stale: run `node tools/k8s/gen-crd.ts` after changing the CRD.
 */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { CRD_NAME, customResourceDefinition } from '../../operator/src/crd.ts';

export const CHART_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'charts', 'task-service-operator');
export const CRD_FILE = join(CHART_DIR, 'crds', `${CRD_NAME}.yaml`);

export const renderCrdYaml = (): string =>
  `# Generated from operator/src/crd.ts by tools/k8s/gen-crd.ts. Do not edit.\n${stringify(customResourceDefinition(), { lineWidth: 0 })}`;

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(CRD_FILE, renderCrdYaml());
  console.log(`wrote ${CRD_FILE}`);
}
