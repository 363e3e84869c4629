import { execFileSync } from 'node:child_process';

const root = new URL('../..', import.meta.url).pathname;

/** What a release's contract with its neighbours is made of: the bus and HTTP contracts, and the database schemas. */
export const CONTRACT_PATHS = ['proto/src', 'services/*/migrations', ':(exclude,glob)**/*.test.ts'];

export interface PreviousRelease {
  /** the commit */
  commit: string;
  /** how it was chosen, for messages: `v1.2.3`, or `the last contract change before <head>: <subject>` */
  label: string;
}

function git(args: string[]): string {
  return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/**
 * The release that runs beside this checkout during its rolling upgrade (docs/releases.md,
 * Upgrading): the newest `v*` tag before HEAD; without a tag yet, each commit that changed a contract
 * (CONTRACT_PATHS) counts as a release, and the previous one is the contract change before the one
 * HEAD carries (uncommitted changes of a contract count as the one HEAD carries), so commits that
 * change no contract move nothing. Throws, saying why, without git history (a shallow or copied checkout).
 */
export function previousRelease(head = 'HEAD'): PreviousRelease {
  try {
    git(['rev-parse', '--verify', `${head}~1`]);
  } catch {
    throw new Error(`no git history before ${head}: the previous release is read from it (clone the repository with its history, not a shallow copy)`);
  }
  let tag = '';
  try {
    tag = git(['describe', '--tags', '--abbrev=0', '--match', 'v[0-9]*', `${head}~1`]);
  } catch {
    // no tag yet
  }
  if (tag) return { commit: git(['rev-list', '-1', tag]), label: tag };
  const dirty = head === 'HEAD' && git(['status', '--porcelain', '--', ...CONTRACT_PATHS]) !== '';
  // the contract change this checkout carries: its own uncommitted one, or the newest commit's
  const current = dirty ? null : git(['rev-list', '-1', head, '--', ...CONTRACT_PATHS]);
  const commit = git(['rev-list', '-1', current ? `${current}~1` : head, '--', ...CONTRACT_PATHS]);
  if (!commit) throw new Error(`no contract change before ${head} (proto/src, services/*/migrations)`);
  return { commit, label: `the contract change before ${dirty ? 'the uncommitted one' : git(['rev-parse', '--short', current!])}: ${git(['log', '-1', '--format=%h %s', commit]).slice(0, 100)}` };
}

/** A file of a commit (null when it has none there). */
export function fileAt(commit: string, path: string): string | null {
  try {
    return execFileSync('git', ['show', `${commit}:${path}`], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 64 * 1024 * 1024 });
  } catch {
    return null;
  }
}

/** The names of the files in a folder of a commit (empty when it has none). */
export function filesAt(commit: string, dir: string): string[] {
  try {
    return git(['ls-tree', '--name-only', `${commit}:${dir}`]).split('\n').filter(Boolean);
  } catch {
    return [];
  }
}
