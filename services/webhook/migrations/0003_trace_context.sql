-- The W3C traceparent of the request that wrote an outbox row, and of the consumer that ingested an
-- event (null when tracing was off): the relay's publish and each delivery attempt join that trace
-- (docs/observability.md#traces).
ALTER TABLE outbox ADD COLUMN traceparent text;
ALTER TABLE events ADD COLUMN traceparent text;
