import { z } from 'zod';
import { configSchema } from './config.ts';

/** The configuration file as JSON Schema (input side: defaults shown, optional keys not required). */
export function configJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(configSchema, { io: 'input', target: 'draft-2020-12' });
}

/** The published JSON Schema text. */
export function renderJsonSchema(): string {
  return `${JSON.stringify({ ...configJsonSchema(), $id: 'https://task-service.local/schemas/firewall-config.json', title: 'task-firewall configuration' }, null, 2)}\n`;
}
