import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const tuning = new URL('./gc-tuning.ts', import.meta.url).href;

/**
 * A child node that calls tuneGarbageCollection and then keeps every object of one allocation site
 * alive across scavenges (what makes V8 pretenure a site), with V8 tracing its decisions. Returns
 * what the call returned and how many times V8 marked a site for tenuring ("maybe tenure" or "tenure": whether
 * a candidate is confirmed depends on when the next scavenge runs, so only the marking is certain).
 */
function run(extraFlags: string[]): { tuned: boolean; tenured: number } {
  const script = `
    const { tuneGarbageCollection } = await import(${JSON.stringify(tuning)});
    const tuned = tuneGarbageCollection();
    // every object stays alive to the end: each scavenge sees all of the site's objects survive,
    // whatever moment it runs at (with some dropped, a run whose scavenges fell after a drop tenured nothing)
    const keep = [];
    const make = (i) => ({ a: i, b: [i] });
    for (let i = 0; i < 3_000_000; i++) keep.push(make(i));
    console.log('tuned=' + tuned);`;
  const r = spawnSync(process.execPath, ['--trace-pretenuring-statistics', ...extraFlags, '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
  expect(r.status, r.stderr).toBe(0);
  return { tuned: r.stdout.includes('tuned=true'), tenured: (r.stdout.match(/=> (maybe )?tenure\b/g) ?? []).length };
}

describe('tuneGarbageCollection', () => {
  it('turns allocation-site pretenuring off: objects that survive a scavenge no longer move a site to the old generation', () => {
    const r = run([]);
    expect(r.tuned).toBe(true);
    expect(r.tenured).toBe(0);
  });

  it('leaves V8 its default when the command line names the flag (how tools/bench/gc.ts compares)', () => {
    const r = run(['--allocation-site-pretenuring']);
    expect(r.tuned).toBe(false);
    // the same workload, pretenuring on: V8 marks the site
    expect(r.tenured).toBeGreaterThan(0);
  });
});
