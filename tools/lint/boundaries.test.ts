import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';

/**
 * The import boundaries in eslint.config.js, run through ESLint's API on snippets placed where real
 * files live. Type information is switched off: the boundary rule reads only import strings, and
 * the fixtures are not files the TypeScript project knows.
 */
const root = fileURLToPath(new URL('../..', import.meta.url));
const eslint = new ESLint({ cwd: root, overrideConfig: [tseslint.configs.disableTypeChecked] });

async function restricted(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe('import boundaries', () => {
  it('reports a service reaching into another service or tools/ by relative path', async () => {
    expect(await restricted('services/gateway/src/fixture.ts', "import { tasksService } from '../../tasks/src/service.ts';\n")).toHaveLength(1);
    expect(await restricted('services/tasks/src/game/fixture.ts', "import { until } from '../../../../tools/testenv/index.ts';\n")).toHaveLength(1);
    expect(await restricted('services/webhook/src/fixture.ts', "export { until } from '../../../tools/testenv/wait.ts';\n")).toHaveLength(1);
  });

  it('reports a service importing another service package', async () => {
    expect(await restricted('services/webhook/src/fixture.ts', "import { buildGateway } from '@tasksvc/gateway';\n")).toHaveLength(1);
  });

  it('allows proto, runtime, libraries and the service’s own files', async () => {
    const code = [
      "import { AppError } from '@tasksvc/proto';",
      "import { localDate } from '@tasksvc/proto/calendar/dates.ts';",
      "import { createPool } from '@tasksvc/runtime';",
      "import { z } from 'zod';",
      "import { x } from '../handlers/common.ts';",
      "import { y } from './sibling.ts';",
      '',
    ].join('\n');
    expect(await restricted('services/tasks/src/domain/fixture.ts', code)).toEqual([]);
  });

  it('keeps SQL in the repositories: drizzle and pg only under src/db/ (and in the runtime)', async () => {
    expect(await restricted('services/tasks/src/game/fixture.ts', "import { eq } from 'drizzle-orm';\n")).toHaveLength(1);
    expect(await restricted('services/webhook/src/handlers/fixture.ts', "import pg from 'pg';\n")).toHaveLength(1);
    expect(await restricted('services/tasks/src/db/fixture.ts', "import { eq } from 'drizzle-orm';\nimport { alias } from 'drizzle-orm/pg-core';\n")).toEqual([]);
    expect(await restricted('services/runtime/src/fixture.ts', "import pg from 'pg';\n")).toEqual([]);
  });

  it('lets tests use the test environment', async () => {
    expect(await restricted('services/webhook/src/fixture.test.ts', "import { until } from '../../../tools/testenv/index.ts';\n")).toEqual([]);
  });

  it('limits the UI to its own files and proto', async () => {
    expect(await restricted('ui/src/components/Fixture.tsx', "import { upcoming } from '../../../services/tasks/src/domain/task-schedule.ts';\n")).toHaveLength(1);
    expect(await restricted('ui/src/Fixture.tsx', "import { freePort } from '@tasksvc/runtime';\n")).toHaveLength(1);
    const allowed = "import { upcoming } from '../../../proto/src/calendar/recurrence.ts';\nimport { api } from '../lib/api.ts';\n";
    expect(await restricted('ui/src/components/Fixture.tsx', allowed)).toEqual([]);
  });
});
