import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root, and `../shared` beside it (spec, notes, schemas) where present. */
export const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SHARED = join(REPO, '..', 'shared');
