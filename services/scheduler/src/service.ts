import { cronStatusRpc } from '@tasksvc/proto';
import type { ServiceDefinition } from '@tasksvc/runtime';

/** The job whose runs `/api/health` reports as the last cron run. */
export const HEALTH_CRON_JOB = 'daily-quest';

export const schedulerService: ServiceDefinition = {
  name: 'scheduler',
  migrations: { schema: 'scheduler', dir: new URL('../migrations', import.meta.url).pathname },
  async start({ bus, pool }) {
    const status = bus.serve(cronStatusRpc, async () => {
      const { rows } = await pool.query<{ last: Date | null }>('SELECT max(started_at) AS last FROM scheduler.cron_runs WHERE job = $1', [HEALTH_CRON_JOB]);
      const last = rows[0]?.last ?? null;
      return {
        lastRunAt: last ? last.toISOString() : null,
        minutesSinceLastRun: last ? Math.floor((Date.now() - last.getTime()) / 60_000) : null,
      };
    });
    return {
      async stop() {
        await status.stop();
      },
    };
  },
};
