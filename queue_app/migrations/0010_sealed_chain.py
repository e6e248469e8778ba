"""No global lock on the decision path: decisions are sealed into the chain after they commit.

Until now every decision took one advisory lock (the chain's) in its insert trigger and held it
through its commit, so decisions in every queue committed one at a time. From here on the
insert trigger takes no global lock: it records the reviewer's name and, for an overturn only,
checks four eyes under a lock of that one item; the frozen-reason-code trigger waits for the
decisions in flight that name the code (FOR UPDATE against their foreign-key locks) instead of
taking the chain lock. An AFTER INSERT trigger queues the decision for
the sealer (queue_app_unsealeddecision), which gathers committed decisions into batches: a
Merkle root over the batch's decisions, chained to the previous batch, the first batch to the
old chain's head.

Existing decisions keep their chain_seq and chain_hash (the table is append-only: nothing here
rewrites them); verify_decisions checks the old chain and the sealed batches.
"""

import importlib

import django.db.models.deletion
from django.db import migrations, models

_0007 = importlib.import_module("queue_app.migrations.0007_decision_audit")


# The old trigger's lock key, kept for the way back.
CHAIN_LOCK_KEY = 0x5243636861696E
# Overturns of one item take turns on pg_advisory_xact_lock(OVERTURN_LOCK_BASE + item id):
# "RC" in the top bytes keeps these keys apart from every other advisory lock of the app.
OVERTURN_LOCK_BASE = 0x5243 << 48

FORWARD = f"""
CREATE TRIGGER chainbatch_append_only BEFORE UPDATE OR DELETE ON queue_app_chainbatch
  FOR EACH ROW EXECUTE FUNCTION queue_app_refuse_rewrite();
CREATE TRIGGER chainbatch_no_truncate BEFORE TRUNCATE ON queue_app_chainbatch
  FOR EACH STATEMENT EXECUTE FUNCTION queue_app_refuse_rewrite();
CREATE TRIGGER chainentry_append_only BEFORE UPDATE OR DELETE ON queue_app_chainentry
  FOR EACH ROW EXECUTE FUNCTION queue_app_refuse_rewrite();
CREATE TRIGGER chainentry_no_truncate BEFORE TRUNCATE ON queue_app_chainentry
  FOR EACH STATEMENT EXECUTE FUNCTION queue_app_refuse_rewrite();

-- A decision's leaf in its batch's Merkle tree: sha256(0x00 || the fields the chain covers),
-- the 0x00 prefix keeping leaves and inner nodes (0x01) apart, as in RFC 6962.
CREATE FUNCTION queue_app_decision_leaf(d queue_app_decision) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT encode(sha256('\\x00'::bytea || convert_to(queue_app_decision_chain_input(d), 'UTF8')),
                'hex')
$$;

CREATE OR REPLACE FUNCTION queue_app_decision_before_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  clash bigint;
BEGIN
  -- The identity as it is now, whatever the writer put there (migration 0007).
  NEW.reviewer_username := (SELECT u.username FROM auth_user AS u WHERE u.id = NEW.reviewer_id);
  IF NEW.supersedes_id IS NOT NULL THEN
    -- Overturns of one item take turns, on a lock of that item alone: the check below then
    -- sees every earlier decision of the item committed. Review decisions take no lock.
    PERFORM pg_advisory_xact_lock({OVERTURN_LOCK_BASE} + NEW.item_id);
    -- Four eyes over the item's whole supersede chain (migration 0007).
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
  -- No chain position and no chain lock: the sealer places the decision once it commits.
  NEW.chain_seq := NULL;
  NEW.chain_hash := '';
  RETURN NEW;
END;
$$;

-- The frozen-once-used check no longer needs the chain lock. A decision naming a code holds
-- the code's row FOR KEY SHARE from its foreign-key check until it commits; FOR UPDATE here
-- conflicts with that, so an edit waits for every decision in flight that names the code, then
-- sees them below and is refused. A decision whose check comes after the edit's lock waits for
-- the edit to commit, and is recorded under the new wording: no wording ever changes after a
-- decision naming it has committed. The cost is on this rare path, not on every decision.
CREATE OR REPLACE FUNCTION queue_app_reasoncode_frozen_once_used() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM queue_app_reasoncode WHERE id = OLD.id FOR UPDATE;
  IF EXISTS (SELECT 1 FROM queue_app_decision AS d WHERE d.reason_code_id = OLD.id) THEN
    RAISE EXCEPTION 'reason code % (%) is used by decisions: its label, code, verdict and queue are frozen',
      OLD.id, OLD.code
      USING ERRCODE = 'restrict_violation',
            HINT = 'Retire the code and add a new one with the new wording.';
  END IF;
  RETURN NEW;
END;
$$;

CREATE FUNCTION queue_app_decision_queue_for_sealing() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO queue_app_unsealeddecision (decision_id) VALUES (NEW.id);
  RETURN NULL;
END;
$$;

CREATE TRIGGER decision_queue_for_sealing AFTER INSERT ON queue_app_decision
  FOR EACH ROW EXECUTE FUNCTION queue_app_decision_queue_for_sealing();
"""

# The way back: migration 0007's trigger functions, as they were.
RESTORE_0007 = _0007.FORWARD[
    _0007.FORWARD.index("CREATE OR REPLACE FUNCTION queue_app_decision_before_insert()") :
    _0007.FORWARD.index("CREATE TRIGGER reasoncode_frozen_once_used")
].replace("CREATE FUNCTION queue_app_reasoncode_frozen_once_used", "CREATE OR REPLACE FUNCTION queue_app_reasoncode_frozen_once_used")


BACKWARD = f"""
DROP TRIGGER IF EXISTS decision_queue_for_sealing ON queue_app_decision;
DROP FUNCTION IF EXISTS queue_app_decision_queue_for_sealing();
DROP FUNCTION IF EXISTS queue_app_decision_leaf(queue_app_decision);
DROP TRIGGER IF EXISTS chainbatch_append_only ON queue_app_chainbatch;
DROP TRIGGER IF EXISTS chainbatch_no_truncate ON queue_app_chainbatch;
DROP TRIGGER IF EXISTS chainentry_append_only ON queue_app_chainentry;
DROP TRIGGER IF EXISTS chainentry_no_truncate ON queue_app_chainentry;
{RESTORE_0007}
"""


class Migration(migrations.Migration):

    dependencies = [
        ('queue_app', '0009_polish_names'),
    ]

    operations = [
        # Models first (below), then the SQL rules that refer to their tables.
        migrations.CreateModel(
            name='ChainBatch',
            fields=[
                ('seq', models.BigIntegerField(primary_key=True, serialize=False)),
                ('size', models.PositiveIntegerField()),
                ('merkle_root', models.CharField(max_length=64)),
                ('prev_hash', models.CharField(blank=True, max_length=64)),
                ('batch_hash', models.CharField(max_length=64, unique=True)),
                ('sealed_at', models.DateTimeField()),
            ],
            options={
                'ordering': ['-seq'],
            },
        ),
        migrations.CreateModel(
            name='UnsealedDecision',
            fields=[
                ('decision', models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, primary_key=True, related_name='+', serialize=False, to='queue_app.decision')),
            ],
        ),
        migrations.CreateModel(
            name='ChainEntry',
            fields=[
                ('decision', models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, primary_key=True, related_name='seal', serialize=False, to='queue_app.decision')),
                ('position', models.PositiveIntegerField()),
                ('leaf', models.CharField(max_length=64)),
                ('batch', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='entries', to='queue_app.chainbatch')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('batch', 'position'), name='chainentry_position')],
            },
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
    ]
