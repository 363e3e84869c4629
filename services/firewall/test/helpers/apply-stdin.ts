// Applies the nft script read from stdin through libnftables (run inside `unshare -n`).
import { readFileSync } from 'node:fs';
import { nftRun } from '../../src/nft.ts';

nftRun(readFileSync(0, 'utf8'));
process.stdout.write(nftRun('list ruleset'));
