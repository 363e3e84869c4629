-- A cron bucket writes up to hundreds of thousands of outbox rows, and the relay marks each one
-- published moments later. Until vacuum removes them, every relay scan of outbox_pending steps over
-- those dead index entries from the oldest on (inserts only ever touch the right edge, so nothing
-- else cleans the left), which made each scan cost grow with the burst. Vacuum after every few
-- thousand changes instead of after 20% of the table.
ALTER TABLE outbox SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000, autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 5000);
