-- belfry schema, version 18: the audit trail's unpublished changes kept apart (issue 34,
-- docs/audit-trail.md). Until now the publisher marked each change published with an UPDATE of
-- its job_changes row: a second, whole copy of every row (the view JSON and all three indexes'
-- entries), about a seventh of the server's time in a bulk load, and twice the table's size on
-- disk until vacuum. Now a change is pending while its id is in job_change_pending: a row of one
-- bigint, added by the statement that records the change (a statement trigger over its new rows,
-- so the command path's COPY is unchanged) and deleted once the change is published. A
-- job_changes row is written once.
CREATE TABLE job_change_pending (
  change_id bigint PRIMARY KEY
);

CREATE FUNCTION belfry_job_changes_pending() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO job_change_pending (change_id) SELECT change_id FROM belfry_new_changes;
  RETURN NULL;
END
$$;

CREATE TRIGGER job_changes_pending AFTER INSERT ON job_changes
  REFERENCING NEW TABLE AS belfry_new_changes
  FOR EACH STATEMENT EXECUTE FUNCTION belfry_job_changes_pending();

-- The changes not published yet carry over; the flag and its index go.
INSERT INTO job_change_pending (change_id) SELECT change_id FROM job_changes WHERE NOT published;
DROP INDEX job_changes_unpublished;
ALTER TABLE job_changes DROP COLUMN published;
