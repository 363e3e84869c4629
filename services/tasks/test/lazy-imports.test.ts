import { describe, expect, it } from 'vitest';
import { heavyAtStart, loadedAtStart, TASKS_FILE_FORMATS } from '../../../tools/testenv/start-imports.ts';

describe('the tasks service at start', () => {
  // ical.js, xmldom, csv-parse and fflate are loaded by the first CalDAV request, calendar feed read,
  // .ics export or import (handlers/caldav.ts, domain/ical.ts, handlers/user-data.ts, import/handlers.ts):
  // at start they were 33 modules and ~2.3 MB of heap (tools/bench/footprint.ts --why); chrono-node (the date
  // phrases an import reads) by the first import: 0.4 MB of heap
  it('loads no file-format library or phrase parser until a CalDAV request, feed, .ics export or import needs it', () => {
    const urls = loadedAtStart('services/tasks/src/service.ts');
    expect(urls.some((u) => u.includes('/services/tasks/src/handlers/tasks.ts'))).toBe(true);
    expect(heavyAtStart(urls, TASKS_FILE_FORMATS)).toEqual([]);
  });
});
