"""item_open_due covers items awaiting their check: they are open work until confirmed
(migration 0021), so the breach and at-risk counts read them from the same partial index.

Built CONCURRENTLY (hence not atomic): the items table is the busiest in the schema, and a plain
CREATE INDEX would block every claim and decision while it reads the table. The old index is
dropped first, the same way; in between, the counts read the table without it.
"""

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("queue_app", "0021_deadline_until_check")]

    operations = [
        RemoveIndexConcurrently(model_name="reviewitem", name="item_open_due"),
        AddIndexConcurrently(
            model_name="reviewitem",
            index=models.Index(
                condition=models.Q(
                    ("due_at__isnull", False),
                    ("state__in", ["pending", "leased", "held", "awaiting_check"]),
                ),
                fields=["queue", "due_at"],
                name="item_open_due",
            ),
        ),
    ]
