-- The W3C traceparent of the request that wrote an outbox row (null when tracing was off): the
-- relay publishes the row inside that trace, so its consumers' work joins it (docs/observability.md#traces).
ALTER TABLE outbox ADD COLUMN traceparent text;
ALTER TABLE tasks_game.outbox ADD COLUMN traceparent text;
