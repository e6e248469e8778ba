"""Second-person outcomes are sealed into the decision log's batches, so a checkpoint covers them.

A checker's confirmation is what lets a held decision take effect; a QA review and an
adjudication are part of the record an auditor reads. Their rows were append-only (migration
0011) but in no chain: an owner who switched the triggers off could rewrite who confirmed a
payment, and verify_decisions --checkpoint stayed green. From here on an outcome is queued for
the sealer as it commits (queue_app_unsealedlaneoutcome, like decisions since 0010), and the
sealer places outcomes in the same batches as decisions, after them, in one Merkle tree.

An outcome's leaf covers its own columns and its task's identity (which decision of which item
and queue it concluded on, whose), under a prefix no decision's leaf can start with. Outcomes
recorded before this migration are queued too: nothing here rewrites a row, and their first
seal covers them as they stand.
"""

import django.db.models.deletion
from django.db import migrations, models

# The fields an outcome's leaf covers, from the outcome (o) and its task (t). Every nullable
# field is coalesced so each keeps its place between the separators.
OUTCOME_LEAF_INPUT = """concat_ws('|', 'lane_outcome', o.task_id, t.kind, t.queue_id, t.item_id,
                   t.decision_id, t.maker_id, coalesce(t.source_id::text, ''), o.kind,
                   o.result, o.actor_id, md5(o.actor_username), o.lease_token, o.verdict,
                   coalesce(o.reason_code_id::text, ''), coalesce(o.agrees_verdict::text, ''),
                   coalesce(o.agrees_reason::text, ''), md5(o.note),
                   coalesce(o.overturn_id::text, ''),
                   to_char(o.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'))"""

# Every outcome recorded so far waits for its first seal (a test runs this on its own).
QUEUE_EXISTING_OUTCOMES = """
INSERT INTO queue_app_unsealedlaneoutcome (outcome_id)
SELECT o.task_id FROM queue_app_laneoutcome AS o
 WHERE NOT EXISTS (SELECT 1 FROM queue_app_laneoutcomeentry AS e WHERE e.outcome_id = o.task_id)
ON CONFLICT DO NOTHING
"""

FORWARD = f"""
CREATE TRIGGER laneoutcomeentry_append_only BEFORE UPDATE OR DELETE ON queue_app_laneoutcomeentry
  FOR EACH ROW EXECUTE FUNCTION queue_app_refuse_rewrite();
CREATE TRIGGER laneoutcomeentry_no_truncate BEFORE TRUNCATE ON queue_app_laneoutcomeentry
  FOR EACH STATEMENT EXECUTE FUNCTION queue_app_refuse_rewrite();

-- An outcome's leaf: sha256(0x00 || its fields), as a decision's (migration 0010). A decision's
-- input starts with its id (a number), an outcome's with 'lane_outcome': the two never meet.
-- NULL when the outcome's task is gone, so verification sees that too.
CREATE FUNCTION queue_app_laneoutcome_leaf(o queue_app_laneoutcome) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT encode(sha256('\\x00'::bytea || convert_to({OUTCOME_LEAF_INPUT}, 'UTF8')), 'hex')
    FROM queue_app_lanetask AS t
   WHERE t.id = o.task_id
$$;

CREATE FUNCTION queue_app_laneoutcome_queue_for_sealing() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO queue_app_unsealedlaneoutcome (outcome_id) VALUES (NEW.task_id);
  RETURN NULL;
END;
$$;

CREATE TRIGGER laneoutcome_queue_for_sealing AFTER INSERT ON queue_app_laneoutcome
  FOR EACH ROW EXECUTE FUNCTION queue_app_laneoutcome_queue_for_sealing();

{QUEUE_EXISTING_OUTCOMES};
"""

# Going back would drop the sealed outcome entries while their batches' sizes and roots still
# count them: every such batch would then fail verification, for good. Refused once any is.
REFUSE_IF_SEALED = """
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM queue_app_laneoutcomeentry) THEN
    RAISE EXCEPTION 'second-person outcomes are sealed: migration 0020 cannot be reversed'
      USING HINT = 'Unapplying it would drop their entries and break every batch holding one.';
  END IF;
END
$$
"""

BACKWARD = f"""
{REFUSE_IF_SEALED};
DROP TRIGGER IF EXISTS laneoutcome_queue_for_sealing ON queue_app_laneoutcome;
DROP FUNCTION IF EXISTS queue_app_laneoutcome_queue_for_sealing();
DROP FUNCTION IF EXISTS queue_app_laneoutcome_leaf(queue_app_laneoutcome);
DROP TRIGGER IF EXISTS laneoutcomeentry_append_only ON queue_app_laneoutcomeentry;
DROP TRIGGER IF EXISTS laneoutcomeentry_no_truncate ON queue_app_laneoutcomeentry;
"""


class Migration(migrations.Migration):

    dependencies = [
        ('queue_app', '0019_wake_workers_after_commit'),
    ]

    operations = [
        migrations.CreateModel(
            name='UnsealedLaneOutcome',
            fields=[
                ('outcome', models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, primary_key=True, related_name='+', serialize=False, to='queue_app.laneoutcome')),
            ],
        ),
        migrations.CreateModel(
            name='LaneOutcomeEntry',
            fields=[
                ('outcome', models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, primary_key=True, related_name='seal', serialize=False, to='queue_app.laneoutcome')),
                ('position', models.PositiveIntegerField()),
                ('leaf', models.CharField(max_length=64)),
                ('batch', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='outcome_entries', to='queue_app.chainbatch')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('batch', 'position'), name='laneoutcomeentry_position')],
            },
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
    ]
