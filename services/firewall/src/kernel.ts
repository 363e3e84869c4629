// The kernel side of an apply: change our table in place when the kernel holds one (the meters keep
// their per-source state), else load the full script. Listings here are terse (no set elements), so
// they stay cheap whatever the size of the blacklist.
import type { Logger } from 'pino';
import { listTable, listTableJson, nftRun } from './nft.ts';
import { kernelLayoutOf, parseFull, TABLE, updateScript } from './ruleset.ts';

export type ApplyMode = 'in-place' | 'replaced';

/**
 * Make the kernel hold `script` (a full script from `renderFull`). In place when our table exists; a
 * refused in-place batch changes nothing, and the full replace is tried next (its meters restart).
 */
export function applyRuleset(script: string, log?: Logger): ApplyMode {
  const json = listTableJson(TABLE, { terse: true });
  if (json === undefined) {
    nftRun(script);
    return 'replaced';
  }
  try {
    nftRun(updateScript(kernelLayoutOf(json), parseFull(script)));
    return 'in-place';
  } catch (e) {
    log?.warn({ err: e }, 'in-place update refused; replacing the table instead (per-source meters restart)');
    nftRun(script);
    return 'replaced';
  }
}

/** Our table as the kernel lists it without set elements and counters; null when it does not exist. */
export function kernelFingerprint(): string | null {
  return listTable(TABLE, { terse: true }) ?? null;
}
