"""Separation of duties: one decision chain, distinct people in each role, for every writer.

The chain of a decision is its item's decisions of the same review round (the decision and
the overturns after it) and their lane tasks. Each person who takes part has a role: maker,
overturner, check, qa or adjudication (queue_app_chain_roles). The database refuses:

- a lane task's lease or outcome to anyone whose principal has another role in the chain
  (a checker never QA-reviews or adjudicates the decision they confirmed, an overturner never
  checks or QA-reviews in the chain, as the maker and QA reviewer were barred before);
- an overturn by anyone who checked, QA-reviewed or adjudicated in the chain, and any overturn
  while an adjudication is open over the decision, except by that adjudication's holder: the
  disagreement is settled in its lane, never beside it, so no adjudication stays open over a
  superseded decision.

Lane claims and overturns of an item take the item's row lock (the lane trigger FOR KEY SHARE
when a lease changes hands, the overturn FOR UPDATE), so a claim racing an overturn by the same
person is seen by whichever commits second. QA and adjudication tasks store their checker's
principal (checker_principal_id) so the claim skips them by a column, as it skips the maker's.
Existing open tasks are filled in; no decision row is touched.
"""

from django.db import migrations, models

LANE_BARRED_BEFORE = """
CREATE OR REPLACE FUNCTION queue_app_lane_barred(t queue_app_lanetask, user_id bigint)
RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT queue_app_principal(user_id) IN (t.maker_principal_id,
                                          coalesce(t.second_principal_id, -1))
$$;
"""

LANETASK_TRIGGER_BEFORE = """
CREATE OR REPLACE FUNCTION queue_app_lanetask_before_write() RETURNS trigger LANGUAGE plpgsql AS $$
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
"""

FORWARD = """
-- The roles a principal took in a decision's chain: the decisions of its item in its round
-- (maker, or overturner) and the lane tasks on them (their kind), by whoever holds or held
-- the task's lease (a done task keeps its holder, who wrote the outcome: the fence).
CREATE FUNCTION queue_app_chain_roles(p_decision bigint, p_principal bigint) RETURNS text[]
LANGUAGE sql STABLE AS $$
  WITH c AS (SELECT item_id, review_round FROM queue_app_decision WHERE id = p_decision)
  SELECT coalesce(array_agg(DISTINCT r.role), '{}') FROM (
    SELECT CASE WHEN x.verdict = 'overturn' THEN 'overturner' ELSE 'maker' END AS role
      FROM queue_app_decision AS x, c
     WHERE x.item_id = c.item_id AND x.review_round = c.review_round
       AND queue_app_principal(x.reviewer_id) = p_principal
    UNION ALL
    SELECT t.kind
      FROM queue_app_lanetask AS t
      JOIN queue_app_decision AS x ON x.id = t.decision_id, c
     WHERE t.item_id = c.item_id AND x.review_round = c.review_round
       AND t.lease_owner_id IS NOT NULL
       AND queue_app_principal(t.lease_owner_id) = p_principal
  ) AS r
$$;

-- Barred from a task: the stored principals (maker, QA reviewer, checker: what the claim
-- skips by column), and anyone with another role than the task's in the decision's chain.
-- An adjudicator who overturns is the overturner of their own adjudication: one part. The
-- maker of a review decision is judged by the principal stored on its tasks, as the claim
-- skips them (the maker role below counts for the check of an overturn).
CREATE OR REPLACE FUNCTION queue_app_lane_barred(t queue_app_lanetask, user_id bigint)
RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT queue_app_principal(user_id) IN (t.maker_principal_id,
                                          coalesce(t.second_principal_id, -1),
                                          coalesce(t.checker_principal_id, -1))
      OR EXISTS (SELECT 1
                   FROM unnest(queue_app_chain_roles(t.decision_id,
                                                     queue_app_principal(user_id))) AS r (role)
                  WHERE r.role <> t.kind
                    AND NOT (t.kind = 'adjudication' AND r.role = 'overturner')
                    AND NOT (r.role = 'maker' AND NOT EXISTS (
                          SELECT 1 FROM queue_app_decision AS d
                           WHERE d.id = t.decision_id AND d.verdict = 'overturn')))
$$;

CREATE OR REPLACE FUNCTION queue_app_lanetask_before_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    -- Whatever the writer sent: the principals as they are now.
    NEW.maker_principal_id := queue_app_principal(NEW.maker_id);
    NEW.second_principal_id := CASE WHEN NEW.second_id IS NULL THEN NULL
                                    ELSE queue_app_principal(NEW.second_id) END;
    -- The checker who confirmed the decision, when that confirmation is visible here; the QA
    -- task CONFIRM_CHECK opens in the confirmation's own statement cannot see it, so that
    -- statement names the checker itself (the lease and outcome checks read the outcome).
    NEW.checker_principal_id := CASE WHEN NEW.kind = 'check' THEN NULL ELSE coalesce(
        (SELECT queue_app_principal(o.actor_id)
           FROM queue_app_lanetask AS c JOIN queue_app_laneoutcome AS o ON o.task_id = c.id
          WHERE c.decision_id = NEW.decision_id AND c.kind = 'check'
            AND o.result = 'confirmed'),
        NEW.checker_principal_id) END;
  ELSE
    IF OLD.state = 'done' THEN
      RAISE EXCEPTION 'lane task % is done: % refused', OLD.id, TG_OP
        USING ERRCODE = 'restrict_violation';
    END IF;
    IF (NEW.kind, NEW.queue_id, NEW.item_id, NEW.decision_id, NEW.maker_id,
        NEW.maker_principal_id, NEW.source_id, NEW.second_id, NEW.second_principal_id,
        NEW.checker_principal_id, NEW.created_at)
       IS DISTINCT FROM
       (OLD.kind, OLD.queue_id, OLD.item_id, OLD.decision_id, OLD.maker_id,
        OLD.maker_principal_id, OLD.source_id, OLD.second_id, OLD.second_principal_id,
        OLD.checker_principal_id, OLD.created_at) THEN
      RAISE EXCEPTION 'lane task %: what it is about never changes', OLD.id
        USING ERRCODE = 'restrict_violation';
    END IF;
  END IF;
  IF NEW.lease_owner_id IS NOT NULL THEN
    IF TG_OP = 'INSERT' OR NEW.lease_owner_id IS DISTINCT FROM OLD.lease_owner_id THEN
      -- A lease changing hands waits for an overturn of the item in flight (it holds the
      -- item FOR UPDATE), then reads the chain with that overturn committed.
      PERFORM 1 FROM queue_app_reviewitem WHERE id = NEW.item_id FOR KEY SHARE;
    END IF;
    IF queue_app_lane_barred(NEW, NEW.lease_owner_id) THEN
      RAISE EXCEPTION 'second person: user % may not take the % of decision % (they, or the '
                      'person their API client acts for, have another part in its chain)',
                      NEW.lease_owner_id, NEW.kind, NEW.decision_id
        USING ERRCODE = 'check_violation';
    END IF;
  END IF;
  RETURN NEW;
END;
$$;

-- An overturn: nobody who checked, QA-reviewed or adjudicated in the chain writes it (the
-- maker and earlier overturners are refused by four eyes, decision_chain), and while an
-- adjudication is open over the decision only its holder does, in the adjudication's own
-- transaction. The item's row lock comes first: lane claims (lanetask trigger) and finishes
-- (LOCK_LANE_TASK) of the item take it too, so what is read below is every committed part.
CREATE FUNCTION queue_app_decision_separation() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  holder bigint;
  open_adjudication boolean;
  roles text[];
BEGIN
  PERFORM 1 FROM queue_app_reviewitem WHERE id = NEW.item_id FOR UPDATE;
  SELECT true, t.lease_owner_id INTO open_adjudication, holder
    FROM queue_app_lanetask AS t
   WHERE t.decision_id = NEW.supersedes_id AND t.kind = 'adjudication' AND t.state = 'open';
  IF open_adjudication AND holder IS DISTINCT FROM NEW.reviewer_id THEN
    RAISE EXCEPTION 'separation: decision % has an open adjudication; it is settled in the '
                    'adjudication lane, not overturned beside it', NEW.supersedes_id
      USING ERRCODE = 'check_violation';
  END IF;
  roles := queue_app_chain_roles(NEW.supersedes_id, queue_app_principal(NEW.reviewer_id));
  IF open_adjudication THEN
    roles := array_remove(roles, 'adjudication');  -- the holder, settling it
  END IF;
  roles := array_remove(array_remove(roles, 'maker'), 'overturner');  -- four eyes says so
  IF cardinality(roles) > 0 THEN
    RAISE EXCEPTION 'separation: user % may not overturn decision %: they took part in its '
                    'chain as %', NEW.reviewer_id, NEW.supersedes_id, array_to_string(roles, ', ')
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER decision_separation BEFORE INSERT ON queue_app_decision
  FOR EACH ROW WHEN (NEW.verdict = 'overturn')
  EXECUTE FUNCTION queue_app_decision_separation();

-- Open QA and adjudication tasks of confirmed decisions learn their checker.
ALTER TABLE queue_app_lanetask DISABLE TRIGGER lanetask_second_person;
UPDATE queue_app_lanetask AS t
   SET checker_principal_id = queue_app_principal(o.actor_id)
  FROM queue_app_lanetask AS c JOIN queue_app_laneoutcome AS o ON o.task_id = c.id
 WHERE t.state = 'open' AND t.kind IN ('qa', 'adjudication')
   AND c.decision_id = t.decision_id AND c.kind = 'check' AND o.result = 'confirmed';
ALTER TABLE queue_app_lanetask ENABLE TRIGGER lanetask_second_person;
"""

BACKWARD = (
    """
DROP TRIGGER IF EXISTS decision_separation ON queue_app_decision;
DROP FUNCTION IF EXISTS queue_app_decision_separation();
"""
    + LANETASK_TRIGGER_BEFORE
    + LANE_BARRED_BEFORE
    + """
DROP FUNCTION IF EXISTS queue_app_chain_roles(bigint, bigint);
"""
)


class Migration(migrations.Migration):
    dependencies = [("queue_app", "0028_item_story")]

    operations = [
        migrations.AddField(
            model_name="lanetask",
            name="checker_principal_id",
            field=models.BigIntegerField(editable=False, null=True),
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
    ]
