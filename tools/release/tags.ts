/**
 * Image tags for a release, computed from the pushed git tag and the tagged commit.
 *
 * The rule (docs/releases.md repeats it for operators):
 *
 * - A release tag is `v` + a SemVer 2.0 version without build metadata: `v1.2.3` or
 *   `v1.3.0-rc.1`. Anything else is rejected (build metadata `+…` cannot appear in an image tag,
 *   and a tag such as `v1.2` or `release-1` is most likely a mistake we would rather stop on).
 * - A stable release (no pre-release part) gets `latest`, `<major>.<minor>.<patch>`,
 *   `<major>.<minor>` and `sha-<first 7 hex of the commit>`.
 * - A pre-release gets only its exact version and `sha-<short>`: operators who follow `latest` or a
 *   minor series must never be moved onto a release candidate.
 * - When the already released tags are known (`releasedTags`), a stable release that is not the
 *   newest one does not move what newer releases own: `latest` stays with the highest stable
 *   version, and `<major>.<minor>` with the highest patch of that series. This makes a backport
 *   such as v1.1.5 (after v1.2.0 shipped) safe: it moves `1.1` but not `latest`.
 */

export interface Version {
  major: number;
  minor: number;
  patch: number;
  /** dot-separated pre-release identifiers, empty for a stable release */
  prerelease: string[];
}

export class ReleaseTagError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ReleaseTagError';
  }
}

// SemVer 2.0 core and pre-release (numeric identifiers without leading zeros), no build metadata.
const NUM = '(0|[1-9]\\d*)';
const PRE_ID = '(?:0|[1-9]\\d*|\\d*[a-zA-Z-][0-9a-zA-Z-]*)';
const TAG_RE = new RegExp(`^v${NUM}\\.${NUM}\\.${NUM}(?:-(${PRE_ID}(?:\\.${PRE_ID})*))?$`);
const SHA_RE = /^[0-9a-f]{7,64}$/i;

/** Parse `v1.2.3` / `v1.3.0-rc.1` (also accepts `refs/tags/v1.2.3`); throws ReleaseTagError otherwise. */
export function parseReleaseTag(tag: string): Version {
  const name = tag.startsWith('refs/tags/') ? tag.slice('refs/tags/'.length) : tag;
  const m = TAG_RE.exec(name);
  if (!m) {
    throw new ReleaseTagError(
      `"${tag}" is not a release tag: expected v<major>.<minor>.<patch> with an optional pre-release such as -rc.1 (e.g. v1.2.3, v1.3.0-rc.1); build metadata (+…) is not allowed`,
    );
  }
  const [major, minor, patch] = [m[1], m[2], m[3]].map(Number) as [number, number, number];
  if (![major, minor, patch].every(Number.isSafeInteger)) throw new ReleaseTagError(`"${tag}": version numbers are too large`);
  return { major, minor, patch, prerelease: m[4] ? m[4].split('.') : [] };
}

export function formatVersion(v: Version): string {
  return `${v.major}.${v.minor}.${v.patch}${v.prerelease.length ? `-${v.prerelease.join('.')}` : ''}`;
}

/** SemVer precedence: negative when a < b. */
export function compareVersions(a: Version, b: Version): number {
  const core = a.major - b.major || a.minor - b.minor || a.patch - b.patch;
  if (core) return Math.sign(core);
  // A pre-release sorts before its release: 1.3.0-rc.1 < 1.3.0.
  if (!a.prerelease.length && !b.prerelease.length) return 0;
  if (!a.prerelease.length) return 1;
  if (!b.prerelease.length) return -1;
  for (let i = 0; i < Math.max(a.prerelease.length, b.prerelease.length); i++) {
    const x = a.prerelease[i];
    const y = b.prerelease[i];
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    const xn = /^\d+$/.test(x);
    const yn = /^\d+$/.test(y);
    if (xn && yn) {
      if (Number(x) !== Number(y)) return Math.sign(Number(x) - Number(y));
    } else if (xn !== yn) {
      return xn ? -1 : 1;
    } else if (x !== y) {
      return x < y ? -1 : 1;
    }
  }
  return 0;
}

export function shortSha(sha: string): string {
  if (!SHA_RE.test(sha)) throw new ReleaseTagError(`"${sha}" is not a commit SHA (7 to 64 hex characters)`);
  return sha.slice(0, 7).toLowerCase();
}

export interface TagInput {
  /** the git tag that triggered the release, e.g. `v1.2.3` */
  tag: string;
  /** the tagged commit (full or at least 7 hex characters) */
  sha: string;
  /** every release tag that exists (may include `tag` itself and non-release tags, which are ignored) */
  releasedTags?: string[];
}

/** The image tags for one release, in a stable order: latest, version, minor series, sha. */
export function computeTags(input: TagInput): string[] {
  const v = parseReleaseTag(input.tag);
  const sha = `sha-${shortSha(input.sha)}`;
  if (v.prerelease.length) return [formatVersion(v), sha];

  const others = (input.releasedTags ?? []).flatMap((t) => {
    try {
      const o = parseReleaseTag(t);
      return o.prerelease.length ? [] : [o];
    } catch {
      return [];
    }
  });
  const newerStable = others.some((o) => compareVersions(o, v) > 0);
  const newerInSeries = others.some((o) => o.major === v.major && o.minor === v.minor && compareVersions(o, v) > 0);

  const tags: string[] = [];
  if (!newerStable) tags.push('latest');
  tags.push(formatVersion(v));
  if (!newerInSeries) tags.push(`${v.major}.${v.minor}`);
  tags.push(sha);
  return tags;
}

/**
 * Full image references: every repository × every tag. Repositories are `<registry>/<namespace>`
 * prefixes plus the image name; Docker requires lower-case repository paths (a GitHub owner such
 * as `TaskOrg` is not), so they are lower-cased here once for all registries.
 */
export function imageReferences(opts: { tags: string[]; registries: string[]; image: string }): string[] {
  const repos = opts.registries.map((r) => `${r.replace(/\/+$/, '')}/${opts.image}`.toLowerCase());
  for (const repo of repos) {
    if (!/^[a-z0-9]+([._-][a-z0-9]+)*(:\d+)?(\/[a-z0-9]+([._-]+[a-z0-9]+)*)+$/.test(repo)) {
      throw new ReleaseTagError(`"${repo}" is not a valid image repository (registry/namespace/name)`);
    }
  }
  return repos.flatMap((repo) => opts.tags.map((t) => `${repo}:${t}`));
}

// ---------------------------------------------------------------------------------------------
// CLI: node tools/release/tags.ts --tag v1.2.3 --sha <commit> [--released "<tags…>"]
//        [--image task-service-gateway --registries ghcr.io/org,docker.io/org,quay.io/org]
//        [--format lines|json|csv|github-output]
// Positional form: tags.ts <tag> <sha>; in GitHub Actions both default to GITHUB_REF_NAME and
// GITHUB_SHA. Exit 2 (with the reason on stderr) for an invalid tag.

const USAGE =
  'usage: tags.ts --tag <v1.2.3> --sha <commit> [--released "<tag> <tag>…"] [--image <name> --registries <r1,r2,…>] [--format lines|json|csv|github-output]';

export function parseCliArgs(argv: string[]): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('--')) {
      positional.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    if (eq > 0) out[a.slice(2, eq)] = a.slice(eq + 1);
    else {
      const value = argv[i + 1];
      if (value === undefined) throw new ReleaseTagError(`${a} needs a value\n${USAGE}`);
      out[a.slice(2)] = value;
      i++;
    }
  }
  if (positional[0] && !out.tag) out.tag = positional[0];
  if (positional[1] && !out.sha) out.sha = positional[1];
  return out;
}

/** `env` supplies GITHUB_REF_NAME and GITHUB_SHA when --tag / --sha are not given (inside Actions). */
export function runCli(argv: string[], env: Record<string, string | undefined> = {}): { code: number; stdout: string; stderr: string } {
  try {
    const args = parseCliArgs(argv);
    args.tag ??= env.GITHUB_REF_NAME;
    args.sha ??= env.GITHUB_SHA;
    if (!args.tag || !args.sha) return { code: 2, stdout: '', stderr: `${USAGE}\n` };
    const tags = computeTags({ tag: args.tag, sha: args.sha, releasedTags: args.released?.split(/[\s,]+/).filter(Boolean) });
    let list = tags;
    if (args.image || args.registries) {
      if (!args.image || !args.registries) return { code: 2, stdout: '', stderr: `--image and --registries go together\n${USAGE}\n` };
      list = imageReferences({ tags, image: args.image, registries: args.registries.split(/[\s,]+/).filter(Boolean) });
    }
    const format = args.format ?? 'lines';
    const parsed = parseReleaseTag(args.tag);
    switch (format) {
      case 'lines':
        return { code: 0, stdout: `${list.join('\n')}\n`, stderr: '' };
      case 'json':
        return { code: 0, stdout: `${JSON.stringify(list)}\n`, stderr: '' };
      case 'csv':
        return { code: 0, stdout: `${list.join(',')}\n`, stderr: '' };
      case 'github-output': {
        // Multi-line value syntax of $GITHUB_OUTPUT; the delimiter cannot occur in a tag.
        const delimiter = 'TAGS_EOF_7f3c';
        const lines = [`tags<<${delimiter}`, ...list, delimiter, `json=${JSON.stringify(list)}`, `version=${formatVersion(parsed)}`, `short_sha=${shortSha(args.sha)}`, `prerelease=${parsed.prerelease.length > 0}`];
        return { code: 0, stdout: `${lines.join('\n')}\n`, stderr: '' };
      }
      default:
        return { code: 2, stdout: '', stderr: `unknown --format ${format}\n${USAGE}\n` };
    }
  } catch (err) {
    if (err instanceof ReleaseTagError) return { code: 2, stdout: '', stderr: `${err.message}\n` };
    throw err;
  }
}

if (import.meta.filename === process.argv[1]) {
  const r = runCli(process.argv.slice(2), process.env);
  process.stdout.write(r.stdout);
  process.stderr.write(r.stderr);
  process.exitCode = r.code;
}
