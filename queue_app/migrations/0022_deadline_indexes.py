"""The indexes of the deadline that runs until the check (migration 0021), built CONCURRENTLY.

- item_open_work_due replaces item_open_due: the breach and at-risk counts read items awaiting
  their check too, from one partial index.
- lanetask_open_due_claim replaces lanetask_open_claim: Next check walks open tasks by deadline
  (none last), then age.

Not atomic: the items and lane tables are written by every claim and decision, and a plain
CREATE INDEX would block them while it reads the table. Each new index is built before its old
one is dropped, so the statements always have one to walk; if a build fails or is cancelled,
the old index is still there and the migration can be run again (an invalid leftover of the
failed build is dropped first).
"""

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models

# A build that failed half-way leaves an INVALID index under the new name; drop it (a no-op on
# the first attempt) so that the builds below can start again.
DROP_INVALID_LEFTOVERS = """
DO $$
DECLARE leftover text;
BEGIN
  FOR leftover IN SELECT c.relname FROM pg_index AS x JOIN pg_class AS c ON c.oid = x.indexrelid
                   WHERE c.relname IN ('item_open_work_due', 'lanetask_open_due_claim')
                     AND NOT x.indisvalid LOOP
    EXECUTE format('DROP INDEX %I', leftover);
  END LOOP;
END $$
"""


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("queue_app", "0021_deadline_until_check")]

    operations = [
        migrations.RunSQL(DROP_INVALID_LEFTOVERS, migrations.RunSQL.noop),
        AddIndexConcurrently(
            model_name="reviewitem",
            index=models.Index(
                condition=models.Q(
                    ("due_at__isnull", False),
                    ("state__in", ["pending", "leased", "held", "awaiting_check"]),
                ),
                fields=["queue", "due_at"],
                name="item_open_work_due",
            ),
        ),
        RemoveIndexConcurrently(model_name="reviewitem", name="item_open_due"),
        AddIndexConcurrently(
            model_name="lanetask",
            index=models.Index(
                condition=models.Q(("state", "open")),
                fields=["queue", "kind", "due_at", "created_at", "id"],
                name="lanetask_open_due_claim",
            ),
        ),
        RemoveIndexConcurrently(model_name="lanetask", name="lanetask_open_claim"),
    ]
