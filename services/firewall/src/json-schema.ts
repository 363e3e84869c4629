import { z } from 'zod';
import { configSchema } from './config.ts';

/** The published JSON Schema text (input side: defaults shown, optional keys not required). */
export function renderJsonSchema(): string {
  const schema = z.toJSONSchema(configSchema, { io: 'input', target: 'draft-2020-12' });
  return `${JSON.stringify({ ...schema, $id: 'https://task-service.local/schemas/firewall-config.json', title: 'task-firewall configuration' }, null, 2)}\n`;
}
