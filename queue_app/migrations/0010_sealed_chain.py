"""No global lock on the decision path: decisions are sealed into the chain after they commit.

Until now every decision took one advisory lock (the chain's) in its insert trigger and held it
through its commit, so decisions in every queue committed one at a time. From here on the
trigger only checks four eyes; an AFTER INSERT trigger queues the decision for the sealer
(queue_app_unseleddecision), which gathers committed decisions into batches: a Merkle root over
the batch's decisions, chained to the previous batch, the first batch to the old chain's head.

Existing decisions keep their chain_seq and chain_hash (the table is append-only: nothing here
rewrites them); verify_decisions checks the old chain and the sealed batches.
"""

import django.db.models.deletion
from django.db import migrations, models


# The old trigger's lock key, kept for the way back.
CHAIN_LOCK_KEY = 0x5243636861696E

FORWARD = """
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
  superseded_reviewer bigint;
BEGIN
  IF NEW.supersedes_id IS NOT NULL THEN
    SELECT reviewer_id INTO superseded_reviewer FROM queue_app_decision WHERE id = NEW.supersedes_id;
    IF superseded_reviewer = NEW.reviewer_id THEN
      RAISE EXCEPTION 'four eyes: reviewer % cannot overturn their own decision %',
        NEW.reviewer_id, NEW.supersedes_id USING ERRCODE = 'check_violation';
    END IF;
  END IF;
  -- No chain position and no lock: the sealer places the decision once it has committed.
  NEW.chain_seq := NULL;
  NEW.chain_hash := '';
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

BACKWARD = f"""
DROP TRIGGER IF EXISTS decision_queue_for_sealing ON queue_app_decision;
DROP FUNCTION IF EXISTS queue_app_decision_queue_for_sealing();
DROP FUNCTION IF EXISTS queue_app_decision_leaf(queue_app_decision);
DROP TRIGGER IF EXISTS chainbatch_append_only ON queue_app_chainbatch;
DROP TRIGGER IF EXISTS chainbatch_no_truncate ON queue_app_chainbatch;
DROP TRIGGER IF EXISTS chainentry_append_only ON queue_app_chainentry;
DROP TRIGGER IF EXISTS chainentry_no_truncate ON queue_app_chainentry;
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
"""


class Migration(migrations.Migration):

    dependencies = [
        ('queue_app', '0004_ops_indexes'),
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
