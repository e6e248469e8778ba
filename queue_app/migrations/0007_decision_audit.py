"""The decision record as an auditor reads it (issue 20, items 6, 8 and 11).

- Reviewer snapshot: decisions get reviewer_username, filled by the insert trigger from the
  reviewer's row in the same statement, whatever code writes the decision, and covered by the
  chain hash. Existing decisions keep NULL (the table is append-only: no backfill); readers
  fall back to today's username for them and say so.
- Chain hash, version 2: a row with a reviewer_username hashes 'v2', the version 1 fields and
  md5(reviewer_username); a row without one (written before this migration) hashes exactly
  what migration 0002 hashed. verify_decisions recomputes each row with the same function, so
  old and new rows verify side by side, and blanking a new row's username breaks its link.
- Four eyes over the whole supersede chain: nobody who authored any decision of an item may
  write an overturn on it, and an API client's service user counts as the person who created
  the client (ApiClient.created_by, new here). Checked under the chain lock, so every earlier
  decision is committed and seen. Existing clients get created_by from the admin log where the
  admin recorded their creation; clients made otherwise stay NULL (their service user then
  counts as itself).
- Reason codes are frozen once used: changing the label, code, verdict or queue of a code any
  decision references is refused, so a past decision shows the wording it was made with.
"""

from django.conf import settings
from django.db import migrations, models

# pg_advisory_xact_lock key for the decision chain: the same key as migration 0002.
CHAIN_LOCK_KEY = 0x5243636861696E

# Migration 0002's link input, unchanged: what every decision written before this migration
# was hashed with.
CHAIN_INPUT_V1 = """concat_ws('|', d.chain_seq, d.id, d.item_id, d.queue_id, d.reviewer_id, d.verdict,
                   d.reason_code_id, d.evidence_hash, md5(d.note), d.supersedes_id,
                   d.corrected_verdict, d.lease_token,
                   to_char(d.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'))"""

# Existing API clients: their creator, where the admin logged the addition (action_flag 1).
BACKFILL_CREATED_BY = """
UPDATE queue_app_apiclient AS c
   SET created_by_id = l.user_id
  FROM django_admin_log AS l
  JOIN django_content_type AS t ON t.id = l.content_type_id
 WHERE t.app_label = 'queue_app' AND t.model = 'apiclient'
   AND l.action_flag = 1 AND l.object_id = c.id::text
   AND c.created_by_id IS NULL
"""

FORWARD = f"""
-- The person a user acts for under four eyes: an API client's service user acts for whoever
-- created the client; everyone else for themself.
CREATE FUNCTION queue_app_principal(user_id bigint) RETURNS bigint
LANGUAGE sql STABLE AS $$
  SELECT coalesce(
    (SELECT c.created_by_id FROM queue_app_apiclient AS c WHERE c.user_id = $1), $1)
$$;

CREATE OR REPLACE FUNCTION queue_app_decision_chain_input(d queue_app_decision) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT CASE
    -- Written before migration 0007: exactly what 0002 hashed.
    WHEN d.reviewer_username IS NULL THEN {CHAIN_INPUT_V1}
    ELSE concat_ws('|', 'v2', {CHAIN_INPUT_V1}, md5(d.reviewer_username))
  END
$$;

CREATE OR REPLACE FUNCTION queue_app_decision_before_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  prev_seq bigint;
  prev_hash text;
  clash bigint;
BEGIN
  -- The identity as it is now, whatever the writer put there (the project's user model is
  -- django.contrib.auth's User).
  NEW.reviewer_username := (SELECT u.username FROM auth_user AS u WHERE u.id = NEW.reviewer_id);
  -- One chain for all decisions: the lock is held to commit, so the next inserter's query
  -- (a fresh snapshot per statement) sees this row as the head.
  PERFORM pg_advisory_xact_lock({CHAIN_LOCK_KEY});
  IF NEW.supersedes_id IS NOT NULL THEN
    -- Four eyes over the item's whole supersede chain, under the chain lock: every decision
    -- inserted before this one is committed and visible here.
    SELECT d.id INTO clash
      FROM queue_app_decision AS d
     WHERE d.item_id = NEW.item_id
       AND queue_app_principal(d.reviewer_id) = queue_app_principal(NEW.reviewer_id)
     ORDER BY d.id
     LIMIT 1;
    IF clash IS NOT NULL THEN
      RAISE EXCEPTION 'four eyes: reviewer % cannot overturn on item %: decision % is theirs',
        NEW.reviewer_id, NEW.item_id, clash
        USING ERRCODE = 'check_violation',
              DETAIL = 'A decision by an API client counts as its creator''s.';
    END IF;
  END IF;
  SELECT chain_seq, chain_hash INTO prev_seq, prev_hash
    FROM queue_app_decision WHERE chain_seq IS NOT NULL ORDER BY chain_seq DESC LIMIT 1;
  NEW.chain_seq := coalesce(prev_seq, 0) + 1;
  NEW.chain_hash := encode(sha256(convert_to(
      coalesce(prev_hash, '') || '|' || queue_app_decision_chain_input(NEW), 'UTF8')), 'hex');
  RETURN NEW;
END;
$$;

-- A reason code's meaning is part of every decision that names it.
CREATE FUNCTION queue_app_reasoncode_frozen_once_used() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- The chain lock: a decision naming this code that is being inserted right now commits
  -- first and is seen below; one inserted after waits for this change and records under it.
  PERFORM pg_advisory_xact_lock({CHAIN_LOCK_KEY});
  IF EXISTS (SELECT 1 FROM queue_app_decision AS d WHERE d.reason_code_id = OLD.id) THEN
    RAISE EXCEPTION 'reason code % (%) is used by decisions: its label, code, verdict and queue are frozen',
      OLD.id, OLD.code
      USING ERRCODE = 'restrict_violation',
            HINT = 'Retire the code and add a new one with the new wording.';
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER reasoncode_frozen_once_used BEFORE UPDATE ON queue_app_reasoncode
  FOR EACH ROW
  WHEN (OLD.label IS DISTINCT FROM NEW.label OR OLD.code IS DISTINCT FROM NEW.code
        OR OLD.verdict IS DISTINCT FROM NEW.verdict OR OLD.queue_id IS DISTINCT FROM NEW.queue_id)
  EXECUTE FUNCTION queue_app_reasoncode_frozen_once_used();
"""

# Migration 0002's trigger function and link input, restored as they were.
BACKWARD = f"""
DROP TRIGGER IF EXISTS reasoncode_frozen_once_used ON queue_app_reasoncode;
DROP FUNCTION IF EXISTS queue_app_reasoncode_frozen_once_used();

CREATE OR REPLACE FUNCTION queue_app_decision_chain_input(d queue_app_decision) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT {CHAIN_INPUT_V1}
$$;

CREATE OR REPLACE FUNCTION queue_app_decision_before_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
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
  PERFORM pg_advisory_xact_lock({CHAIN_LOCK_KEY});
  SELECT chain_seq, chain_hash INTO prev_seq, prev_hash
    FROM queue_app_decision WHERE chain_seq IS NOT NULL ORDER BY chain_seq DESC LIMIT 1;
  NEW.chain_seq := coalesce(prev_seq, 0) + 1;
  NEW.chain_hash := encode(sha256(convert_to(
      coalesce(prev_hash, '') || '|' || queue_app_decision_chain_input(NEW), 'UTF8')), 'hex');
  RETURN NEW;
END;
$$;

DROP FUNCTION IF EXISTS queue_app_principal(bigint);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("queue_app", "0006_idempotency_scope"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        # The admin log, read once to find who created each existing API client.
        ("admin", "0003_logentry_add_action_flag_choices"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.AddField(
            model_name="apiclient",
            name="created_by",
            field=models.ForeignKey(
                blank=True,
                editable=False,
                null=True,
                on_delete=models.deletion.PROTECT,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name="decision",
            name="reviewer_username",
            field=models.CharField(blank=True, editable=False, max_length=150, null=True),
        ),
        migrations.AlterField(
            model_name="reasoncode",
            name="label",
            field=models.CharField(
                help_text=(
                    "Frozen once a decision uses the code (the database refuses the change): "
                    "past decisions show the wording they were made with. To reword, retire "
                    "this code and add a new one."
                ),
                max_length=200,
            ),
        ),
        migrations.RunSQL(BACKFILL_CREATED_BY, migrations.RunSQL.noop),
        migrations.RunSQL(FORWARD, BACKWARD),
    ]
