"""Rules the database itself enforces, whatever code (or person) writes the rows.

- Composite foreign keys: a decision's reason code belongs to its queue and its verdict; a
  decision's queue is its item's queue; an overturn supersedes a decision of the same item.
- Append-only: UPDATE, DELETE and TRUNCATE on decisions, applied decisions and item events are
  refused by triggers, for every role including the table owner. (Deployments running the app
  under its own role should also REVOKE UPDATE, DELETE, TRUNCATE: see README.md.)
- Four eyes: an overturn is never written by the author of the decision it supersedes.
- Hash chain: each decision carries sha256(previous hash | its own fields), assigned under an
  advisory lock so concurrent inserts form one chain. verify_decisions recomputes it.
- Outbox wake-up: inserting effect jobs NOTIFYs the apply worker on commit.
"""

from django.db import migrations

# pg_advisory_xact_lock key for the decision chain ("RCchain" as an integer, for grepability).
CHAIN_LOCK_KEY = 0x5243636861696E

FORWARD = f"""
ALTER TABLE queue_app_decision
  ADD CONSTRAINT decision_item_in_queue
      FOREIGN KEY (item_id, queue_id) REFERENCES queue_app_reviewitem (id, queue_id),
  ADD CONSTRAINT decision_reason_matches_queue_and_verdict
      FOREIGN KEY (reason_code_id, queue_id, verdict)
      REFERENCES queue_app_reasoncode (id, queue_id, verdict),
  ADD CONSTRAINT decision_supersedes_same_item
      FOREIGN KEY (supersedes_id, item_id) REFERENCES queue_app_decision (id, item_id);

ALTER TABLE queue_app_effectjob
  ADD CONSTRAINT effectjob_attempts_nonnegative CHECK (attempts >= 0);

CREATE FUNCTION queue_app_refuse_rewrite() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
    USING ERRCODE = 'restrict_violation',
          HINT = 'Correct a decision by adding an overturn row.';
END;
$$;

CREATE TRIGGER decision_append_only BEFORE UPDATE OR DELETE ON queue_app_decision
  FOR EACH ROW EXECUTE FUNCTION queue_app_refuse_rewrite();
CREATE TRIGGER decision_no_truncate BEFORE TRUNCATE ON queue_app_decision
  FOR EACH STATEMENT EXECUTE FUNCTION queue_app_refuse_rewrite();
CREATE TRIGGER applieddecision_append_only BEFORE UPDATE OR DELETE ON queue_app_applieddecision
  FOR EACH ROW EXECUTE FUNCTION queue_app_refuse_rewrite();
CREATE TRIGGER applieddecision_no_truncate BEFORE TRUNCATE ON queue_app_applieddecision
  FOR EACH STATEMENT EXECUTE FUNCTION queue_app_refuse_rewrite();
CREATE TRIGGER itemevent_append_only BEFORE UPDATE OR DELETE ON queue_app_itemevent
  FOR EACH ROW EXECUTE FUNCTION queue_app_refuse_rewrite();
CREATE TRIGGER itemevent_no_truncate BEFORE TRUNCATE ON queue_app_itemevent
  FOR EACH STATEMENT EXECUTE FUNCTION queue_app_refuse_rewrite();

-- The fields a chain link covers, as one deterministic string (UTC, microseconds).
CREATE FUNCTION queue_app_decision_chain_input(d queue_app_decision) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT concat_ws('|', d.chain_seq, d.id, d.item_id, d.queue_id, d.reviewer_id, d.verdict,
                   d.reason_code_id, d.evidence_hash, md5(d.note), d.supersedes_id,
                   d.corrected_verdict, d.lease_token,
                   to_char(d.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'))
$$;

CREATE FUNCTION queue_app_decision_before_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  prev_seq bigint;
  prev_hash text;
  superseded_reviewer bigint;
BEGIN
  IF NEW.supersedes_id IS NOT NULL THEN
    SELECT reviewer_id INTO superseded_reviewer FROM queue_app_decision WHERE id = NEW.supersedes_id;
    IF superseded_reviewer = NEW.reviewer_id THEN
      RAISE EXCEPTION 'four eyes: reviewer % cannot overturn their own decision %',
        NEW.reviewer_id, NEW.supersedes_id USING ERRCODE = 'check_violation';
    END IF;
  END IF;
  -- One chain for all decisions: the lock is held to commit, so the next inserter's query
  -- (a fresh snapshot per statement) sees this row as the head.
  PERFORM pg_advisory_xact_lock({CHAIN_LOCK_KEY});
  SELECT chain_seq, chain_hash INTO prev_seq, prev_hash
    FROM queue_app_decision WHERE chain_seq IS NOT NULL ORDER BY chain_seq DESC LIMIT 1;
  NEW.chain_seq := coalesce(prev_seq, 0) + 1;
  NEW.chain_hash := encode(sha256(convert_to(
      coalesce(prev_hash, '') || '|' || queue_app_decision_chain_input(NEW), 'UTF8')), 'hex');
  RETURN NEW;
END;
$$;

CREATE TRIGGER decision_chain BEFORE INSERT ON queue_app_decision
  FOR EACH ROW EXECUTE FUNCTION queue_app_decision_before_insert();

CREATE FUNCTION queue_app_notify_effect_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('queue_app_effect_jobs', '');
  RETURN NULL;
END;
$$;

CREATE TRIGGER effectjob_notify AFTER INSERT ON queue_app_effectjob
  FOR EACH STATEMENT EXECUTE FUNCTION queue_app_notify_effect_jobs();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS effectjob_notify ON queue_app_effectjob;
DROP FUNCTION IF EXISTS queue_app_notify_effect_jobs();
DROP TRIGGER IF EXISTS decision_chain ON queue_app_decision;
DROP FUNCTION IF EXISTS queue_app_decision_before_insert();
DROP FUNCTION IF EXISTS queue_app_decision_chain_input(queue_app_decision);
DROP TRIGGER IF EXISTS decision_append_only ON queue_app_decision;
DROP TRIGGER IF EXISTS decision_no_truncate ON queue_app_decision;
DROP TRIGGER IF EXISTS applieddecision_append_only ON queue_app_applieddecision;
DROP TRIGGER IF EXISTS applieddecision_no_truncate ON queue_app_applieddecision;
DROP TRIGGER IF EXISTS itemevent_append_only ON queue_app_itemevent;
DROP TRIGGER IF EXISTS itemevent_no_truncate ON queue_app_itemevent;
DROP FUNCTION IF EXISTS queue_app_refuse_rewrite();
ALTER TABLE queue_app_effectjob DROP CONSTRAINT IF EXISTS effectjob_attempts_nonnegative;
ALTER TABLE queue_app_decision
  DROP CONSTRAINT IF EXISTS decision_item_in_queue,
  DROP CONSTRAINT IF EXISTS decision_reason_matches_queue_and_verdict,
  DROP CONSTRAINT IF EXISTS decision_supersedes_same_item;
"""


class Migration(migrations.Migration):
    dependencies = [("queue_app", "0001_initial")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
