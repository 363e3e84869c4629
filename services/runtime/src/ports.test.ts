import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { claimPort, freePort } from './ports.ts';

const claimFile = (port: number) => join(tmpdir(), 'tasksvc-ports', String(port));
const ephemeralLow = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);

describe('freePort', () => {
  it('hands out distinct ports below the ephemeral range, each claimed for this process', async () => {
    const ports = await Promise.all(Array.from({ length: 40 }, () => freePort()));
    expect(new Set(ports).size).toBe(40);
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(10_000);
      expect(port).toBeLessThan(Math.min(30_000, ephemeralLow));
      expect(readFileSync(claimFile(port), 'utf8')).toBe(String(process.pid));
    }
  });

  it("never takes a live process's claim, and takes over the claim of one that has ended", async () => {
    const port = await freePort();
    writeFileSync(claimFile(port), '1'); // init: alive as long as the machine is
    expect(claimPort(port)).toBe(false);
    const ended = spawnSync('true').pid;
    writeFileSync(claimFile(port), String(ended));
    expect(claimPort(port)).toBe(true);
    expect(readFileSync(claimFile(port), 'utf8')).toBe(String(process.pid));
  });
});
