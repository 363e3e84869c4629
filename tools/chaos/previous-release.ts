import { execFileSync } from 'node:child_process';

/** Release tags as tools/release/tags.ts accepts them (`v1.2.3`, `v1.2.3-rc.1`). */
const RELEASE_TAG_GLOB = 'v[0-9]*.[0-9]*.[0-9]*';

/**
 * The version the mixed-version test runs beside HEAD (docs/upgrading.md): the highest release tag (by version, a pre-release below its release)
 * reachable from HEAD that is not on HEAD itself (a release is tested against the one before it);
 * with no tag yet, the parent of the last commit that changed a contract (proto/src or proto/contracts).
 */
export function previousRelease(repo: string): { commit: string; label: string } {
  const git = (...args: string[]) => execFileSync('git', ['-C', repo, '-c', 'versionsort.suffix=-', ...args], { encoding: 'utf8' }).trim();
  const onHead = new Set(git('tag', '--points-at', 'HEAD', '--list', RELEASE_TAG_GLOB).split('\n').filter(Boolean));
  const tags = git('tag', '--merged', 'HEAD', '--sort=-v:refname', '--list', RELEASE_TAG_GLOB)
    .split('\n')
    .filter((t) => t && !onHead.has(t));
  if (tags.length > 0) return { commit: git('rev-parse', `${tags[0]}^{commit}`), label: tags[0]! };
  const last = git('log', '-n', '1', '--format=%H', '--', 'proto/contracts', 'proto/src');
  if (!last) throw new Error('no release tag and no commit that changed proto/ in this clone (a shallow clone? the mixed-version test needs the history)');
  const commit = git('rev-parse', `${last}^`);
  return { commit, label: commit.slice(0, 10) };
}
