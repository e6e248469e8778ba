"""Second-person controls: maker-checker and blind QA sampling, on one lane mechanism.

Tables: CheckPolicy (admin-edited), LaneTask (claimable work of kind check, qa or adjudication)
and LaneOutcome (append-only, one per task). Review items gain an awaiting_check state and a
review_round; decisions gain review_round (set by a trigger from the item; a checker's return
opens a new round, and decision_one_per_item is now one review decision per item and round).
Adding the column with a constant default is a catalogue change: no decision row is rewritten.

The rules the database enforces here, whatever code writes the rows:
- a lane task is tied to its decision's item, queue and maker (composite foreign key);
- the maker's principal (and for an adjudication the QA reviewer's) may not hold the task's
  lease nor write its outcome (queue_app_principal: an API client's service user counts as the
  admin who created the client);
- an outcome names the task's lease holder and token (composite foreign key: the fence), one
  per task; outcomes are append-only; a task's identity never changes, a done task not at all;
- an overturn may not supersede a decision whose check is not confirmed (open or returned).
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


FORWARD = """
-- The fence and identity foreign keys (Django cannot declare composite ones).
ALTER TABLE queue_app_lanetask
  ADD CONSTRAINT lanetask_matches_decision
      FOREIGN KEY (decision_id, item_id, queue_id, maker_id)
      REFERENCES queue_app_decision (id, item_id, queue_id, reviewer_id),
  ADD CONSTRAINT lanetask_second_is_source_holder
      FOREIGN KEY (source_id, second_id) REFERENCES queue_app_lanetask (id, lease_owner_id);
ALTER TABLE queue_app_laneoutcome
  ADD CONSTRAINT laneoutcome_fenced_by_lease
      FOREIGN KEY (task_id, actor_id, lease_token)
      REFERENCES queue_app_lanetask (id, lease_owner_id, lease_token);

-- Whether a user's principal is barred from a task (the maker's, or the QA reviewer's).
CREATE FUNCTION queue_app_lane_barred(t queue_app_lanetask, user_id bigint) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT queue_app_principal(user_id) IN (t.maker_principal_id,
                                          coalesce(t.second_principal_id, -1))
$$;

CREATE FUNCTION queue_app_lanetask_before_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    -- Whatever the writer sent: the principals as they are now.
    NEW.maker_principal_id := queue_app_principal(NEW.maker_id);
    NEW.second_principal_id := CASE WHEN NEW.second_id IS NULL THEN NULL
                                    ELSE queue_app_principal(NEW.second_id) END;
  ELSE
    IF OLD.state = 'done' THEN
      RAISE EXCEPTION 'lane task % is done: % refused', OLD.id, TG_OP
        USING ERRCODE = 'restrict_violation';
    END IF;
    IF (NEW.kind, NEW.queue_id, NEW.item_id, NEW.decision_id, NEW.maker_id,
        NEW.maker_principal_id, NEW.source_id, NEW.second_id, NEW.second_principal_id,
        NEW.created_at)
       IS DISTINCT FROM
       (OLD.kind, OLD.queue_id, OLD.item_id, OLD.decision_id, OLD.maker_id,
        OLD.maker_principal_id, OLD.source_id, OLD.second_id, OLD.second_principal_id,
        OLD.created_at) THEN
      RAISE EXCEPTION 'lane task %: what it is about never changes', OLD.id
        USING ERRCODE = 'restrict_violation';
    END IF;
  END IF;
  IF NEW.lease_owner_id IS NOT NULL AND queue_app_lane_barred(NEW, NEW.lease_owner_id) THEN
    RAISE EXCEPTION 'second person: user % may not take the % of decision % (they, or the '
                    'person their API client acts for, made or QA-reviewed it)',
                    NEW.lease_owner_id, NEW.kind, NEW.decision_id
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER lanetask_second_person BEFORE INSERT OR UPDATE ON queue_app_lanetask
  FOR EACH ROW EXECUTE FUNCTION queue_app_lanetask_before_write();
CREATE TRIGGER lanetask_no_delete BEFORE DELETE ON queue_app_lanetask
  FOR EACH ROW EXECUTE FUNCTION queue_app_refuse_rewrite();
CREATE TRIGGER lanetask_no_truncate BEFORE TRUNCATE ON queue_app_lanetask
  FOR EACH STATEMENT EXECUTE FUNCTION queue_app_refuse_rewrite();

-- An outcome: by a second person (never the maker's or QA reviewer's principal); its kind is
-- the task's; a QA verdict is compared with the sampled decision's by the database, and its
-- reason must be one of the queue's codes for that verdict. Reads only task columns a
-- finishing UPDATE in the same statement does not change, so either row version serves.
CREATE FUNCTION queue_app_laneoutcome_before_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  t queue_app_lanetask;
  d queue_app_decision;
  rc queue_app_reasoncode;
BEGIN
  SELECT * INTO t FROM queue_app_lanetask WHERE id = NEW.task_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'no lane task %', NEW.task_id USING ERRCODE = 'foreign_key_violation';
  END IF;
  IF queue_app_lane_barred(t, NEW.actor_id) THEN
    RAISE EXCEPTION 'second person: user % may not finish the % of decision % (they, or the '
                    'person their API client acts for, made or QA-reviewed it)',
                    NEW.actor_id, t.kind, t.decision_id
      USING ERRCODE = 'check_violation';
  END IF;
  NEW.kind := t.kind;
  NEW.actor_username := coalesce((SELECT username FROM auth_user WHERE id = NEW.actor_id), '');
  IF NEW.result = 'reviewed' THEN
    SELECT * INTO d FROM queue_app_decision WHERE id = t.decision_id;
    SELECT * INTO rc FROM queue_app_reasoncode WHERE id = NEW.reason_code_id;
    IF rc.queue_id IS DISTINCT FROM t.queue_id OR rc.verdict IS DISTINCT FROM NEW.verdict THEN
      RAISE EXCEPTION 'QA reason % is not a % reason of queue %',
        NEW.reason_code_id, NEW.verdict, t.queue_id USING ERRCODE = 'foreign_key_violation';
    END IF;
    NEW.agrees_verdict := NEW.verdict = d.verdict;
    NEW.agrees_reason := NEW.reason_code_id = d.reason_code_id;
  ELSE
    NEW.agrees_verdict := NULL;
    NEW.agrees_reason := NULL;
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER laneoutcome_second_person BEFORE INSERT ON queue_app_laneoutcome
  FOR EACH ROW EXECUTE FUNCTION queue_app_laneoutcome_before_insert();
CREATE TRIGGER laneoutcome_append_only BEFORE UPDATE OR DELETE ON queue_app_laneoutcome
  FOR EACH ROW EXECUTE FUNCTION queue_app_refuse_rewrite();
CREATE TRIGGER laneoutcome_no_truncate BEFORE TRUNCATE ON queue_app_laneoutcome
  FOR EACH STATEMENT EXECUTE FUNCTION queue_app_refuse_rewrite();

-- A decision's round is its item's, whatever the writer sent; and an overturn may not
-- supersede a decision that still waits for its check, or was returned by one.
CREATE FUNCTION queue_app_decision_round() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.review_round := coalesce(
      (SELECT review_round FROM queue_app_reviewitem WHERE id = NEW.item_id), 0);
  IF NEW.supersedes_id IS NOT NULL AND EXISTS (
       SELECT 1 FROM queue_app_lanetask AS t
        WHERE t.decision_id = NEW.supersedes_id AND t.kind = 'check'
          AND NOT EXISTS (SELECT 1 FROM queue_app_laneoutcome AS o
                           WHERE o.task_id = t.id AND o.result = 'confirmed')) THEN
    RAISE EXCEPTION 'unconfirmed: decision % has not been confirmed by its checker; return it '
                    'instead of overturning it', NEW.supersedes_id
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER decision_round BEFORE INSERT ON queue_app_decision
  FOR EACH ROW EXECUTE FUNCTION queue_app_decision_round();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS decision_round ON queue_app_decision;
DROP FUNCTION IF EXISTS queue_app_decision_round();
DROP TRIGGER IF EXISTS laneoutcome_second_person ON queue_app_laneoutcome;
DROP TRIGGER IF EXISTS laneoutcome_append_only ON queue_app_laneoutcome;
DROP TRIGGER IF EXISTS laneoutcome_no_truncate ON queue_app_laneoutcome;
DROP FUNCTION IF EXISTS queue_app_laneoutcome_before_insert();
DROP TRIGGER IF EXISTS lanetask_second_person ON queue_app_lanetask;
DROP TRIGGER IF EXISTS lanetask_no_delete ON queue_app_lanetask;
DROP TRIGGER IF EXISTS lanetask_no_truncate ON queue_app_lanetask;
DROP FUNCTION IF EXISTS queue_app_lanetask_before_write();
DROP FUNCTION IF EXISTS queue_app_lane_barred(queue_app_lanetask, bigint);
ALTER TABLE queue_app_laneoutcome DROP CONSTRAINT IF EXISTS laneoutcome_fenced_by_lease;
ALTER TABLE queue_app_lanetask
  DROP CONSTRAINT IF EXISTS lanetask_matches_decision,
  DROP CONSTRAINT IF EXISTS lanetask_second_is_source_holder;
"""


class Migration(migrations.Migration):

    dependencies = [
        ('auth', '0012_alter_user_first_name_max_length'),
        ('queue_app', '0010_sealed_chain'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='CheckPolicy',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('verdict', models.CharField(choices=[('approve', 'Approve'), ('reject', 'Reject'), ('escalate', 'Escalate')], max_length=16)),
                ('path', models.CharField(blank=True, help_text='Dotted path to a number in the payload (e.g. variance_amount); empty: always.', max_length=200)),
                ('threshold', models.DecimalField(blank=True, decimal_places=10, help_text='Needs a check when the number is at or above this (exact).', max_digits=40, null=True)),
            ],
            options={
                'verbose_name': 'check policy',
                'verbose_name_plural': 'check policies',
                'ordering': ['queue', 'verdict', 'path'],
            },
        ),
        migrations.CreateModel(
            name='LaneTask',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('check', 'Check'), ('qa', 'QA'), ('adjudication', 'Adjudication')], max_length=16)),
                ('maker_principal_id', models.BigIntegerField(editable=False, null=True)),
                ('second_principal_id', models.BigIntegerField(editable=False, null=True)),
                ('state', models.CharField(choices=[('open', 'Open'), ('done', 'Done')], default='open', max_length=8)),
                ('lease_token', models.UUIDField(blank=True, null=True)),
                ('lease_expires', models.DateTimeField(blank=True, null=True)),
                ('lease_count', models.PositiveIntegerField(default=0)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('done_at', models.DateTimeField(blank=True, null=True)),
            ],
            options={
                'ordering': ['created_at', 'id'],
            },
        ),
        migrations.RemoveConstraint(
            model_name='decision',
            name='decision_one_per_item',
        ),
        migrations.RemoveConstraint(
            model_name='reviewitem',
            name='item_state_valid',
        ),
        migrations.RemoveConstraint(
            model_name='reviewitem',
            name='item_decided_at_matches_state',
        ),
        migrations.AddField(
            model_name='decision',
            name='review_round',
            field=models.PositiveIntegerField(db_default=0, default=0, editable=False),
        ),
        migrations.AddField(
            model_name='queue',
            name='qa_rate',
            field=models.DecimalField(db_default=0, decimal_places=2, default=0, help_text='Percentage (0-100) of effective decisions drawn for a blind second review.', max_digits=5, verbose_name='QA sample rate (%)'),
        ),
        migrations.AddField(
            model_name='reviewitem',
            name='review_round',
            field=models.PositiveIntegerField(db_default=0, default=0),
        ),
        migrations.AlterField(
            model_name='itemevent',
            name='kind',
            field=models.CharField(choices=[('created', 'Created'), ('claimed', 'Claimed'), ('reclaimed', 'Re-claimed after expiry'), ('renewed', 'Renewed'), ('released', 'Released'), ('auto_escalated', 'Auto-escalated'), ('decided', 'Decided'), ('evidence_replaced', 'Evidence replaced'), ('check_confirmed', 'Check confirmed'), ('check_returned', 'Check returned'), ('qa_reviewed', 'QA reviewed'), ('adjudicated', 'Adjudicated')], max_length=32),
        ),
        migrations.AlterField(
            model_name='reviewitem',
            name='state',
            field=models.CharField(choices=[('pending', 'Pending'), ('leased', 'Leased'), ('decided', 'Decided'), ('awaiting_check', 'Awaiting check')], default='pending', max_length=16),
        ),
        migrations.AddConstraint(
            model_name='decision',
            constraint=models.UniqueConstraint(condition=models.Q(('verdict', 'overturn'), _negated=True), fields=('item', 'review_round'), name='decision_one_per_item'),
        ),
        migrations.AddConstraint(
            model_name='decision',
            constraint=models.UniqueConstraint(fields=('id', 'item', 'queue', 'reviewer'), name='decision_id_item_queue_reviewer'),
        ),
        migrations.AddConstraint(
            model_name='queue',
            constraint=models.CheckConstraint(condition=models.Q(('qa_rate__gte', 0), ('qa_rate__lte', 100)), name='queue_qa_rate_percent'),
        ),
        migrations.AddConstraint(
            model_name='reviewitem',
            constraint=models.CheckConstraint(condition=models.Q(('state__in', ['pending', 'leased', 'decided', 'awaiting_check'])), name='item_state_valid'),
        ),
        migrations.AddConstraint(
            model_name='reviewitem',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('decided_at__isnull', False), ('state__in', ['decided', 'awaiting_check'])), models.Q(models.Q(('state__in', ['decided', 'awaiting_check']), _negated=True), ('decided_at__isnull', True)), _connector='OR'), name='item_decided_at_matches_state'),
        ),
        migrations.AddField(
            model_name='checkpolicy',
            name='queue',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='check_policies', to='queue_app.queue'),
        ),
        migrations.CreateModel(
            name='LaneOutcome',
            fields=[
                ('task', models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, primary_key=True, related_name='outcome', serialize=False, to='queue_app.lanetask')),
                ('kind', models.CharField(choices=[('check', 'Check'), ('qa', 'QA'), ('adjudication', 'Adjudication')], max_length=16)),
                ('result', models.CharField(choices=[('confirmed', 'Confirmed'), ('returned', 'Returned'), ('reviewed', 'QA reviewed'), ('upheld', 'Upheld'), ('overturned', 'Overturned')], max_length=16)),
                ('actor_username', models.CharField(blank=True, editable=False, max_length=150)),
                ('lease_token', models.UUIDField()),
                ('verdict', models.CharField(blank=True, max_length=16)),
                ('agrees_verdict', models.BooleanField(editable=False, null=True)),
                ('agrees_reason', models.BooleanField(editable=False, null=True)),
                ('note', models.TextField(blank=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
            ],
            options={
                'ordering': ['created_at'],
            },
        ),
        migrations.AddField(
            model_name='lanetask',
            name='decision',
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='lane_tasks', to='queue_app.decision'),
        ),
        migrations.AddField(
            model_name='lanetask',
            name='item',
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='lane_tasks', to='queue_app.reviewitem'),
        ),
        migrations.AddField(
            model_name='lanetask',
            name='lease_owner',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddField(
            model_name='lanetask',
            name='maker',
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddField(
            model_name='lanetask',
            name='queue',
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='queue_app.queue'),
        ),
        migrations.AddField(
            model_name='lanetask',
            name='second',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddField(
            model_name='lanetask',
            name='source',
            field=models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='adjudication', to='queue_app.lanetask'),
        ),
        migrations.AddConstraint(
            model_name='checkpolicy',
            constraint=models.CheckConstraint(condition=models.Q(('verdict__in', ['approve', 'reject', 'escalate'])), name='checkpolicy_verdict_valid'),
        ),
        migrations.AddConstraint(
            model_name='checkpolicy',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('path', ''), ('threshold__isnull', True)), models.Q(models.Q(('path', ''), _negated=True), ('threshold__isnull', False)), _connector='OR'), name='checkpolicy_path_and_threshold'),
        ),
        migrations.AddConstraint(
            model_name='checkpolicy',
            constraint=models.UniqueConstraint(fields=('queue', 'verdict', 'path'), name='checkpolicy_unique_per_path'),
        ),
        migrations.AddField(
            model_name='laneoutcome',
            name='actor',
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddField(
            model_name='laneoutcome',
            name='overturn',
            field=models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='adjudication', to='queue_app.decision'),
        ),
        migrations.AddField(
            model_name='laneoutcome',
            name='reason_code',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='queue_app.reasoncode'),
        ),
        migrations.AddIndex(
            model_name='lanetask',
            index=models.Index(condition=models.Q(('state', 'open')), fields=['queue', 'kind', 'created_at', 'id'], name='lanetask_open_claim'),
        ),
        migrations.AddIndex(
            model_name='lanetask',
            index=models.Index(condition=models.Q(('lease_owner__isnull', False), ('state', 'open')), fields=['lease_owner', 'queue', 'kind'], name='lanetask_open_owner'),
        ),
        migrations.AddIndex(
            model_name='lanetask',
            index=models.Index(fields=['item'], name='lanetask_item'),
        ),
        migrations.AddConstraint(
            model_name='lanetask',
            constraint=models.CheckConstraint(condition=models.Q(('kind__in', ['check', 'qa', 'adjudication'])), name='lanetask_kind_valid'),
        ),
        migrations.AddConstraint(
            model_name='lanetask',
            constraint=models.CheckConstraint(condition=models.Q(('state__in', ['open', 'done'])), name='lanetask_state_valid'),
        ),
        migrations.AddConstraint(
            model_name='lanetask',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('done_at__isnull', False), ('state', 'done')), models.Q(('done_at__isnull', True), ('state', 'open')), _connector='OR'), name='lanetask_done_at_matches_state'),
        ),
        migrations.AddConstraint(
            model_name='lanetask',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('lease_expires__isnull', False), ('lease_owner__isnull', False), ('lease_token__isnull', False)), models.Q(('lease_expires__isnull', True), ('lease_owner__isnull', True), ('lease_token__isnull', True)), _connector='OR'), name='lanetask_lease_columns_together'),
        ),
        migrations.AddConstraint(
            model_name='lanetask',
            constraint=models.CheckConstraint(condition=models.Q(('state', 'open'), ('lease_owner__isnull', False), _connector='OR'), name='lanetask_done_under_a_lease'),
        ),
        migrations.AddConstraint(
            model_name='lanetask',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('kind', 'adjudication'), ('second__isnull', False), ('source__isnull', False)), models.Q(models.Q(('kind', 'adjudication'), _negated=True), ('second__isnull', True), ('source__isnull', True)), _connector='OR'), name='lanetask_adjudication_source'),
        ),
        migrations.AddConstraint(
            model_name='lanetask',
            constraint=models.UniqueConstraint(fields=('decision', 'kind'), name='lanetask_one_per_kind'),
        ),
        migrations.AddConstraint(
            model_name='lanetask',
            constraint=models.UniqueConstraint(fields=('id', 'lease_owner'), name='lanetask_id_owner'),
        ),
        migrations.AddConstraint(
            model_name='lanetask',
            constraint=models.UniqueConstraint(fields=('id', 'lease_owner', 'lease_token'), name='lanetask_id_owner_token'),
        ),
        migrations.AddIndex(
            model_name='laneoutcome',
            index=models.Index(fields=['kind', 'created_at'], name='laneoutcome_kind_at'),
        ),
        migrations.AddConstraint(
            model_name='laneoutcome',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('kind', 'check'), ('result__in', ['confirmed', 'returned'])), models.Q(('kind', 'qa'), ('result', 'reviewed')), models.Q(('kind', 'adjudication'), ('result__in', ['upheld', 'overturned'])), _connector='OR'), name='laneoutcome_result_fits_kind'),
        ),
        migrations.AddConstraint(
            model_name='laneoutcome',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('result', 'returned'), _negated=True), models.Q(('note', ''), _negated=True), _connector='OR'), name='laneoutcome_return_has_note'),
        ),
        migrations.AddConstraint(
            model_name='laneoutcome',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('result', 'reviewed'), _negated=True), models.Q(models.Q(('verdict', ''), _negated=True), ('reason_code__isnull', False)), _connector='OR'), name='laneoutcome_qa_has_verdict'),
        ),
        migrations.AddConstraint(
            model_name='laneoutcome',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('overturn__isnull', False), ('result', 'overturned')), models.Q(models.Q(('result', 'overturned'), _negated=True), ('overturn__isnull', True)), _connector='OR'), name='laneoutcome_overturn_names_decision'),
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
    ]
