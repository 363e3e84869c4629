#!/usr/bin/env node
// task-firewall: `core --config <file>` (root daemon), `web --config <file>` (unprivileged UI),
// `check-config <file>` (validate and print every problem with its JSON path), and the admin
// commands in admin.ts (status, rules, allow, deny, apply, confirm, rollback, log, off).
import { pino } from 'pino';
import { readConfigFile, type FirewallConfig } from './config.ts';
import { logLevel } from './env.ts';
import { ADMIN_COMMANDS, CliError, DEFAULT_CONFIG, runAdmin, type Io } from './admin.ts';

const USAGE = `usage: task-firewall core --config <file> | web --config <file> | check-config <file>
       task-firewall status | rules | allow 443/tcp | allow ADDR | deny ADDR | deny 443/tcp | apply | confirm | rollback | log [N] | off
         [--config <file> (default ${DEFAULT_CONFIG}) | --socket <path>]`;

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
        // Once, on stderr (exit status 1 tells scripts it is invalid).
        console.error([`${file}: ${r.problems.length} problem(s)`, ...r.problems.map((p) => `  ${p.path}: ${p.message}`)].join('\n'));
        process.exit(1);
      }
      const c = r.config;
      console.log(
        `${file}: valid (socket ${c.socket_path}, acceptance ${c.acceptance.enabled ? `${c.acceptance.duration}s` : 'off'}, ipv6 ${c.ipv6.enabled ? 'on' : 'off: IPv6 is left alone, not filtered by task-firewall'}, containers ${c.container.enabled ? 'on' : 'off'})`,
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
      if (cmd && ADMIN_COMMANDS.includes(cmd)) {
        await runAdmin(cmd, args, terminalIo());
        return;
      }
      console.error(USAGE);
      process.exit(2);
  }
}

function terminalIo(): Io {
  const io: Io = { out: (l) => console.log(l) };
  if (process.stdout.isTTY && process.stdin.isTTY) {
    io.live = (l) => process.stdout.write(`\r\x1b[2K${l}`);
    io.enter = () =>
      new Promise((resolve) => {
        process.stdin.once('data', () => {
          process.stdin.pause();
          resolve();
        });
      });
  }
  return io;
}

main(process.argv.slice(2)).then(
  () => {
    // The admin commands end here (stdin may still be open after a countdown).
    if (ADMIN_COMMANDS.includes(process.argv[2] ?? '')) process.exit(0);
  },
  (e: unknown) => {
    console.error(e instanceof CliError || e instanceof Error ? e.message : e);
    process.exit(1);
  },
);
