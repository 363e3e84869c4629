-- The W3C traceparent of the work that wrote an outbox row (null when tracing was off): the relay
-- publishes the row inside that trace (docs/observability.md#traces).
ALTER TABLE outbox ADD COLUMN traceparent text;
