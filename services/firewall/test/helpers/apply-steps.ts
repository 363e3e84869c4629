// Runs steps against the kernel (inside `unshare -n`): `{script}` goes through applyRuleset (in place
// when our table exists), `{nft}` straight to libnftables. Prints {modes, listing} as JSON.
import { readFileSync } from 'node:fs';
import { applyRuleset } from '../../src/kernel.ts';
import { nftRun } from '../../src/nft.ts';
import { TABLE } from '../../src/ruleset.ts';

const steps = JSON.parse(readFileSync(0, 'utf8')) as ({ script: string } | { nft: string })[];
const modes: string[] = [];
for (const step of steps) {
  if ('script' in step) modes.push(applyRuleset(step.script));
  else nftRun(step.nft);
}
process.stdout.write(JSON.stringify({ modes, listing: nftRun(`list table inet ${TABLE}`) }));
