import { randomUUID } from 'node:crypto';
import { AppError, MAX_WEBHOOK_ENDPOINTS, type WebhookEndpoint } from '@tasksvc/proto';
import type { Pool, PoolClient } from '@tasksvc/runtime';

export interface EndpointRow {
  id: string;
  user_id: string;
  url: string;
  secret_enc: string | null;
  events: string[];
  enabled: boolean;
  disabled_reason: string | null;
  failing_since: Date | null;
  created_at: Date;
  updated_at: Date;
}

type Db = Pool | PoolClient;

export function endpointView(r: EndpointRow): WebhookEndpoint {
  return {
    id: r.id,
    url: r.url,
    events: r.events as WebhookEndpoint['events'],
    hasSecret: r.secret_enc !== null,
    enabled: r.enabled,
    disabledReason: r.disabled_reason,
    failingSince: r.failing_since?.toISOString() ?? null,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

export async function listEndpoints(db: Db, userId: string): Promise<EndpointRow[]> {
  return (await db.query<EndpointRow>('SELECT * FROM webhook.endpoints WHERE user_id = $1 ORDER BY created_at, id', [userId])).rows;
}

/** Scoped to the owner: another user's id is simply not found. */
export async function getEndpoint(db: Db, userId: string, id: string): Promise<EndpointRow> {
  const row = (await db.query<EndpointRow>('SELECT * FROM webhook.endpoints WHERE id = $1 AND user_id = $2', [id, userId])).rows[0];
  if (!row) throw new AppError('WEBHOOK_NOT_FOUND', 'no such webhook endpoint');
  return row;
}

/** Insert under a per-user advisory lock so concurrent creates cannot pass the limit together. */
export async function insertEndpoint(client: PoolClient, userId: string, v: { url: string; secretEnc: string | null; events: string[]; enabled: boolean }): Promise<EndpointRow> {
  await client.query("SELECT pg_advisory_xact_lock(hashtext('webhook.endpoints'), hashtext($1))", [userId]);
  const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook.endpoints WHERE user_id = $1', [userId]);
  if (rows[0]!.n >= MAX_WEBHOOK_ENDPOINTS) {
    throw new AppError('LIMIT_EXCEEDED', `at most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints per user; delete one first`);
  }
  return (
    await client.query<EndpointRow>(
      'INSERT INTO webhook.endpoints (id, user_id, url, secret_enc, events, enabled) VALUES ($1, $2, $3, $4, $5, $6) RETURNING *',
      [randomUUID(), userId, v.url, v.secretEnc, v.events, v.enabled],
    )
  ).rows[0]!;
}

export async function updateEndpoint(
  db: Db,
  userId: string,
  id: string,
  v: { url?: string; secretEnc?: string | null; events?: string[]; enabled?: boolean },
): Promise<EndpointRow> {
  const sets: string[] = [];
  const args: unknown[] = [id, userId];
  const set = (col: string, value: unknown) => {
    args.push(value);
    sets.push(`${col} = $${args.length}`);
  };
  if (v.url !== undefined) set('url', v.url);
  if (v.secretEnc !== undefined) set('secret_enc', v.secretEnc);
  if (v.events !== undefined) set('events', v.events);
  if (v.enabled !== undefined) {
    set('enabled', v.enabled);
    // re-enabling (or disabling by hand) clears the service's reason and the failure streak
    sets.push('disabled_reason = NULL', 'failing_since = NULL');
  }
  sets.push('updated_at = clock_timestamp()');
  const row = (await db.query<EndpointRow>(`UPDATE webhook.endpoints SET ${sets.join(', ')} WHERE id = $1 AND user_id = $2 RETURNING *`, args)).rows[0];
  if (!row) throw new AppError('WEBHOOK_NOT_FOUND', 'no such webhook endpoint');
  return row;
}

export async function deleteEndpoint(db: Db, userId: string, id: string): Promise<void> {
  const r = await db.query('DELETE FROM webhook.endpoints WHERE id = $1 AND user_id = $2', [id, userId]);
  if (r.rowCount === 0) throw new AppError('WEBHOOK_NOT_FOUND', 'no such webhook endpoint');
}
