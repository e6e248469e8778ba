"""The apply workers' wake-up leaves the decision's transaction.

Migration 0002 sent NOTIFY from a trigger on the effect job insert, so every decision's
transaction notified. PostgreSQL serialises the commits of notifying transactions: at commit
a notifying transaction takes one cluster-wide lock ("database 0", PreCommit_Notify in
src/backend/commands/async.c) and holds it until its commit record is flushed, so notification
order matches commit order. With the chain lock gone (0010), that lock was the decision path's
last global serialisation point: decisions in every queue committed one flush at a time.

Now the services send the wake-up after the commit, in a transaction of its own
(managers.wake_apply_workers_after_commit). That transaction writes nothing else, so PostgreSQL
commits it without waiting for a flush, and the lock is held for microseconds. A wake-up lost
with a dropped connection costs at most the worker's poll interval, as before.
"""

from django.db import migrations

FORWARD = """
DROP TRIGGER IF EXISTS effectjob_notify ON queue_app_effectjob;
DROP FUNCTION IF EXISTS queue_app_notify_effect_jobs();
"""

# As 0002 defined them.
BACKWARD = """
CREATE FUNCTION queue_app_notify_effect_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('queue_app_effect_jobs', '');
  RETURN NULL;
END;
$$;

CREATE TRIGGER effectjob_notify AFTER INSERT ON queue_app_effectjob
  FOR EACH STATEMENT EXECUTE FUNCTION queue_app_notify_effect_jobs();
"""


class Migration(migrations.Migration):
    dependencies = [("queue_app", "0018_history_new_config")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
