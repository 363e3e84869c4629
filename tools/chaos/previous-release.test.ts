import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { previousRelease } from './previous-release.ts';

describe('the version the mixed-version test runs beside HEAD', () => {
  const repos: string[] = [];
  afterEach(() => { for (const r of repos.splice(0)) rmSync(r, { recursive: true, force: true }); });

  /** a repository whose commits each write one file; returns a commit function giving the new hash */
  function repo() {
    const dir = mkdtempSync(join(tmpdir(), 'previous-release-'));
    repos.push(dir);
    const git = (...args: string[]) => execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@localhost', ...args], { encoding: 'utf8' }).trim();
    git('init', '-q');
    const commit = (path: string) => {
      mkdirSync(join(dir, path, '..'), { recursive: true });
      writeFileSync(join(dir, path), `${Math.random()}`);
      git('add', '-A');
      git('commit', '-q', '-m', path);
      return git('rev-parse', 'HEAD');
    };
    return { dir, git, commit };
  }

  it('with no release tag: the parent of the last commit that changed a contract', () => {
    const r = repo();
    r.commit('README.md');
    const beforeContract = r.commit('services/a.ts');
    r.commit('proto/src/events.ts');
    r.commit('services/b.ts');
    expect(previousRelease(r.dir)).toEqual({ commit: beforeContract, label: beforeContract.slice(0, 10) });
  });

  it('with release tags: the last one before HEAD, not one on HEAD itself, and a pre-release below its release, only release-shaped tags', () => {
    const r = repo();
    r.commit('proto/src/a.ts');
    r.git('tag', 'v0.1.0');
    r.commit('proto/src/b.ts');
    r.git('tag', 'v0.2.0-rc.1');
    const second = r.commit('services/b.ts');
    r.git('tag', '-a', 'v0.2.0', '-m', 'release 0.2.0');
    r.commit('proto/src/c.ts');
    r.git('tag', 'nightly');
    expect(previousRelease(r.dir)).toEqual({ commit: second, label: 'v0.2.0' });
    r.commit('services/d.ts');
    r.git('tag', 'v0.3.0');
    expect(previousRelease(r.dir)).toEqual({ commit: second, label: 'v0.2.0' });
  });

  it('with no tag and no contract change in the history (a shallow clone) it says why', () => {
    const r = repo();
    r.commit('README.md');
    expect(() => previousRelease(r.dir)).toThrow(/needs the history/);
  });
});
