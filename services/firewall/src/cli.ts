#!/usr/bin/env node
// task-firewall: `core --config <file>` (root daemon), `web --config <file>` (unprivileged UI),
// `check-config <file>` (validate and print every problem with its JSON path).
import { pino } from 'pino';
import { readConfigFile, type FirewallConfig } from './config.ts';
import { logLevel } from './env.ts';

const USAGE = 'usage: task-firewall core --config <file> | web --config <file> | check-config <file>';

function configArg(args: string[]): string {
  const i = args.indexOf('--config');
  const v = i >= 0 ? args[i + 1] : args.find((a) => a.startsWith('--config='))?.slice('--config='.length);
  if (!v) {
    console.error(USAGE);
    process.exit(2);
  }
  return v;
}

function loadOrExit(file: string): FirewallConfig {
  const r = readConfigFile(file);
  if (r.ok) return r.config;
  console.error(`invalid configuration ${file}:`);
  for (const p of r.problems) console.error(`  ${p.path}: ${p.message}`);
  process.exit(1);
}

async function main(argv: string[]): Promise<void> {
  const [cmd, ...args] = argv;
  const logger = pino({ name: `task-firewall-${cmd ?? 'cli'}`, level: logLevel() });
  switch (cmd) {
    case 'check-config': {
      const file = args.find((a) => !a.startsWith('-'));
      if (!file) {
        console.error(USAGE);
        process.exit(2);
      }
      const r = readConfigFile(file);
      if (!r.ok) {
        const report = [`${file}: ${r.problems.length} problem(s)`, ...r.problems.map((p) => `  ${p.path}: ${p.message}`)].join('\n');
        console.error(report);
        // Scripts capturing only stdout see the report too; a terminal shows it once.
        if (!(process.stdout.isTTY && process.stderr.isTTY)) console.log(report);
        process.exit(1);
      }
      const c = r.config;
      console.log(
        `${file}: valid (socket ${c.socket_path}, acceptance ${c.acceptance.enabled ? `${c.acceptance.duration}s` : 'off'}, ipv6 ${c.ipv6.enabled ? 'on' : 'off'}, containers ${c.container.enabled ? 'on' : 'off'})`,
      );
      return;
    }
    case 'core': {
      const file = configArg(args);
      const config = loadOrExit(file);
      const { runCore } = await import('./daemon.ts');
      await runCore(config, file, logger);
      return;
    }
    case 'web': {
      const file = configArg(args);
      const config = loadOrExit(file);
      const { runWeb } = await import('./web.ts');
      await runWeb(config, logger);
      return;
    }
    default:
      console.error(USAGE);
      process.exit(2);
  }
}

main(process.argv.slice(2)).catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
