-- belfry schema, version 17: each job's last undeliverable trigger (issue 33, docs/reliability.md,
-- "Undeliverable triggers"). A row is written only when the broker refuses one of the job's
-- triggers for good (a record error: too large, topic authorization, an unknown topic, ...) and
-- the trigger went to the trigger DLQ; the healthy firing path never writes here. The job view
-- shows it as lastDeliveryError.
CREATE TABLE trigger_delivery_errors (
  job_id  text   PRIMARY KEY,
  topic   text   NOT NULL,  -- the job's topic that refused the trigger
  slot_ms bigint NOT NULL,  -- the refused trigger's slot (belfry-scheduled-for), epoch ms
  error   text   NOT NULL,
  at_ms   bigint NOT NULL   -- when the refusal was recorded, epoch ms
);
