-- The W3C traceparent of the consumer that ingested an event (null when tracing was off): each
-- delivery attempt joins that trace (docs/observability.md#traces). The outbox's column is the
-- runtime's (outboxTableSql).
ALTER TABLE events ADD COLUMN traceparent text;
