import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { compareVersions, computeTags, imageReferences, parseReleaseTag, ReleaseTagError, runCli } from './tags.ts';

const SHA = 'abc1234def5678abc1234def5678abc1234def56';
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('release tags', () => {
  it('gives a stable release latest, the version, the minor series and sha-<short>', () => {
    expect(computeTags({ tag: 'v1.2.3', sha: SHA })).toEqual(['latest', '1.2.3', '1.2', 'sha-abc1234']);
    expect(computeTags({ tag: 'v0.1.0', sha: 'ABC1234' })).toEqual(['latest', '0.1.0', '0.1', 'sha-abc1234']);
  });

  it('never moves latest or the minor series for a pre-release', () => {
    expect(computeTags({ tag: 'v1.3.0-rc.1', sha: SHA })).toEqual(['1.3.0-rc.1', 'sha-abc1234']);
    expect(computeTags({ tag: 'v2.0.0-beta', sha: SHA })).toEqual(['2.0.0-beta', 'sha-abc1234']);
  });

  it('leaves latest and the series with newer releases when a backport is tagged', () => {
    const releasedTags = ['v1.1.4', 'v1.2.0', 'v1.3.0-rc.1', 'not-a-release', 'v1.1.5'];
    // 1.1.5 is the newest 1.1 patch but 1.2.0 owns latest.
    expect(computeTags({ tag: 'v1.1.5', sha: SHA, releasedTags })).toEqual(['1.1.5', '1.1', 'sha-abc1234']);
    // Re-tagging an old patch moves neither.
    expect(computeTags({ tag: 'v1.1.4', sha: SHA, releasedTags })).toEqual(['1.1.4', 'sha-abc1234']);
    // A release candidate of a higher version does not hold latest back.
    expect(computeTags({ tag: 'v1.2.1', sha: SHA, releasedTags })).toEqual(['latest', '1.2.1', '1.2', 'sha-abc1234']);
  });

  it.each(['1.2.3', 'v1.2', 'v1.2.3.4', 'v01.2.3', 'v1.2.3+build.5', 'v1.2.3-', 'v1.2.3-rc..1', 'v1.2.3-01', 'latest', '', 'v1.2.3 '])('rejects %j', (tag) => {
    expect(() => computeTags({ tag, sha: SHA })).toThrow(ReleaseTagError);
  });

  it('rejects a commit that is not a hex SHA', () => {
    expect(() => computeTags({ tag: 'v1.2.3', sha: 'abc12' })).toThrow(/commit SHA/);
    expect(() => computeTags({ tag: 'v1.2.3', sha: 'main' })).toThrow(/commit SHA/);
  });

  it('accepts a full ref name', () => {
    expect(parseReleaseTag('refs/tags/v1.2.3')).toEqual({ major: 1, minor: 2, patch: 3, prerelease: [] });
  });

  it('orders versions by SemVer precedence', () => {
    const sorted = ['v1.0.0', 'v1.0.0-rc.1', 'v1.0.0-alpha', 'v1.0.0-alpha.1', 'v1.0.0-alpha.beta', 'v1.0.0-beta.11', 'v1.0.0-beta.2', 'v0.9.10', 'v0.9.9']
      .map(parseReleaseTag)
      .sort(compareVersions)
      .map((v) => `${v.major}.${v.minor}.${v.patch}${v.prerelease.length ? `-${v.prerelease.join('.')}` : ''}`);
    expect(sorted).toEqual(['0.9.9', '0.9.10', '1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-alpha.beta', '1.0.0-beta.2', '1.0.0-beta.11', '1.0.0-rc.1', '1.0.0']);
  });

  it('crosses repositories with tags, lower-casing the repository', () => {
    expect(imageReferences({ tags: ['latest', '1.2'], registries: ['ghcr.io/TaskOrg', 'docker.io/taskorg/'], image: 'task-service-gateway' })).toEqual([
      'ghcr.io/taskorg/task-service-gateway:latest',
      'ghcr.io/taskorg/task-service-gateway:1.2',
      'docker.io/taskorg/task-service-gateway:latest',
      'docker.io/taskorg/task-service-gateway:1.2',
    ]);
    expect(() => imageReferences({ tags: ['latest'], registries: ['ghcr.io/bad org'], image: 'x' })).toThrow(ReleaseTagError);
  });
});

describe('tags CLI', () => {
  it('prints one tag a line, or references and GitHub outputs', () => {
    expect(runCli(['--tag', 'v1.2.3', '--sha', SHA])).toEqual({ code: 0, stdout: 'latest\n1.2.3\n1.2\nsha-abc1234\n', stderr: '' });
    expect(runCli(['v1.2.3', SHA, '--format', 'json']).stdout).toBe('["latest","1.2.3","1.2","sha-abc1234"]\n');
    expect(runCli(['v1.2.3', SHA, '--format', 'github-output']).stdout).toContain('\njson=["latest","1.2.3","1.2","sha-abc1234"]\n');
    const gh = runCli(['--tag', 'v1.3.0-rc.1', '--sha', SHA, '--image', 'task-service-auth', '--registries', 'ghcr.io/o,quay.io/o', '--format', 'github-output']);
    expect(gh.code).toBe(0);
    expect(gh.stdout).toBe(
      [
        'tags<<TAGS_EOF_7f3c',
        'ghcr.io/o/task-service-auth:1.3.0-rc.1',
        'ghcr.io/o/task-service-auth:sha-abc1234',
        'quay.io/o/task-service-auth:1.3.0-rc.1',
        'quay.io/o/task-service-auth:sha-abc1234',
        'TAGS_EOF_7f3c',
        'json=["ghcr.io/o/task-service-auth:1.3.0-rc.1","ghcr.io/o/task-service-auth:sha-abc1234","quay.io/o/task-service-auth:1.3.0-rc.1","quay.io/o/task-service-auth:sha-abc1234"]',
        'version=1.3.0-rc.1',
        'short_sha=abc1234',
        'prerelease=true',
        '',
      ].join('\n'),
    );
  });

  it('falls back to the GitHub Actions variables', () => {
    expect(runCli([], { GITHUB_REF_NAME: 'v2.0.1', GITHUB_SHA: SHA }).stdout).toBe('latest\n2.0.1\n2.0\nsha-abc1234\n');
    expect(runCli(['--tag', 'v2.0.2'], { GITHUB_REF_NAME: 'v9.9.9', GITHUB_SHA: SHA }).stdout).toContain('2.0.2\n');
    expect(runCli([], {}).code).toBe(2);
  });

  it('exits 2 with the reason for an invalid tag, as a real process', () => {
    const r = spawnSync(`${ROOT}node_modules/.bin/node`, ['tools/release/tags.ts', '--tag', 'v1.2', '--sha', SHA], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/"v1\.2" is not a release tag/);
    expect(r.stdout).toBe('');
    const ok = spawnSync(`${ROOT}node_modules/.bin/node`, ['tools/release/tags.ts', '--tag', 'v1.2.3', '--sha', SHA], { cwd: ROOT, encoding: 'utf8' });
    expect(ok.status).toBe(0);
    expect(ok.stdout).toBe('latest\n1.2.3\n1.2\nsha-abc1234\n');
  });
});
