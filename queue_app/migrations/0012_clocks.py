"""Deadlines, holds and the subject's history (issue 15).

- Queue: default_sla (empty = no deadline), sla_warning (the at-risk window), max_hold.
- HoldReason: a closed set of hold codes per queue; an item's hold reason must be one of its
  own queue's (composite foreign key below, like a decision's reason code).
- ReviewItem: due_at, the hold columns (hold_until, held_at, hold_reason; set exactly when
  state = 'held', by check constraint), subject_key.
- The claim index item_pending_claim gains due_at (priority, earliest deadline, age); holds get
  their own partial index, item_held_until, which the claim reads for due holds the way it
  reads item_leased_expiry for expired leases.

Existing items get no deadline (due_at NULL): nothing is invented after the fact. No decision
row is touched.
"""

import datetime
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("queue_app", "0011_second_person"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="HoldReason",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("code", models.SlugField(max_length=64)),
                ("label", models.CharField(max_length=200)),
                (
                    "retired_at",
                    models.DateTimeField(
                        blank=True,
                        help_text="Retired reasons are not offered for new holds.",
                        null=True,
                    ),
                ),
            ],
            options={
                "ordering": ["queue", "label"],
            },
        ),
        migrations.RemoveConstraint(
            model_name="reviewitem",
            name="item_state_valid",
        ),
        migrations.RemoveIndex(
            model_name="reviewitem",
            name="item_pending_claim",
        ),
        migrations.AddField(
            model_name="queue",
            name="default_sla",
            field=models.DurationField(
                blank=True,
                help_text="Deadline for items that arrive without one (due_at = receipt + this). Empty: such items have no deadline.",
                null=True,
                verbose_name="default SLA",
            ),
        ),
        migrations.AddField(
            model_name="queue",
            name="max_hold",
            field=models.DurationField(
                default=datetime.timedelta(days=7),
                help_text="The longest a reviewer may put an item on hold in one go.",
            ),
        ),
        migrations.AddField(
            model_name="queue",
            name="sla_warning",
            field=models.DurationField(
                default=datetime.timedelta(seconds=14400),
                help_text="Items due within this window count as at risk on the console and /ops/.",
                verbose_name="SLA warning window",
            ),
        ),
        migrations.AddField(
            model_name="reviewitem",
            name="due_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="reviewitem",
            name="held_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="reviewitem",
            name="hold_until",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="reviewitem",
            name="subject_key",
            field=models.CharField(blank=True, max_length=200, null=True),
        ),
        migrations.AlterField(
            model_name="itemevent",
            name="kind",
            field=models.CharField(
                choices=[
                    ("created", "Created"),
                    ("claimed", "Claimed"),
                    ("reclaimed", "Re-claimed after expiry"),
                    ("renewed", "Renewed"),
                    ("released", "Released"),
                    ("auto_escalated", "Auto-escalated"),
                    ("decided", "Decided"),
                    ("evidence_replaced", "Evidence replaced"),
                    ("held", "Put on hold"),
                    ("resumed", "Back from hold"),
                ],
                max_length=32,
            ),
        ),
        migrations.AlterField(
            model_name="reviewitem",
            name="state",
            field=models.CharField(
                choices=[
                    ("pending", "Pending"),
                    ("leased", "Leased"),
                    ("decided", "Decided"),
                    ("held", "On hold"),
                ],
                default="pending",
                max_length=16,
            ),
        ),
        migrations.AddConstraint(
            model_name="queue",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("default_sla__isnull", True),
                    ("default_sla__gt", datetime.timedelta(0)),
                    _connector="OR",
                ),
                name="queue_default_sla_positive",
            ),
        ),
        migrations.AddConstraint(
            model_name="queue",
            constraint=models.CheckConstraint(
                condition=models.Q(("sla_warning__gte", datetime.timedelta(0))),
                name="queue_sla_warning_not_negative",
            ),
        ),
        migrations.AddConstraint(
            model_name="queue",
            constraint=models.CheckConstraint(
                condition=models.Q(("max_hold__gt", datetime.timedelta(0))),
                name="queue_max_hold_positive",
            ),
        ),
        migrations.AddField(
            model_name="holdreason",
            name="queue",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="hold_reasons",
                to="queue_app.queue",
            ),
        ),
        migrations.AddField(
            model_name="reviewitem",
            name="hold_reason",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="queue_app.holdreason",
            ),
        ),
        migrations.AddIndex(
            model_name="reviewitem",
            index=models.Index(
                condition=models.Q(("state", "pending")),
                fields=["queue", "-priority", "due_at", "created_at"],
                name="item_pending_claim",
            ),
        ),
        migrations.AddIndex(
            model_name="reviewitem",
            index=models.Index(
                condition=models.Q(("state", "held")),
                fields=["queue", "hold_until"],
                name="item_held_until",
            ),
        ),
        migrations.AddIndex(
            model_name="reviewitem",
            index=models.Index(
                condition=models.Q(("subject_key__isnull", False)),
                fields=["subject_key", "-created_at"],
                name="item_subject_key",
            ),
        ),
        migrations.AddIndex(
            model_name="reviewitem",
            index=models.Index(
                condition=models.Q(
                    ("due_at__isnull", False), ("state__in", ["pending", "leased", "held"])
                ),
                fields=["queue", "due_at"],
                name="item_open_due",
            ),
        ),
        migrations.AddConstraint(
            model_name="reviewitem",
            constraint=models.CheckConstraint(
                condition=models.Q(("state__in", ["pending", "leased", "decided", "held"])),
                name="item_state_valid",
            ),
        ),
        migrations.AddConstraint(
            model_name="reviewitem",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(
                        ("held_at__isnull", False),
                        ("hold_reason__isnull", False),
                        ("hold_until__gt", models.F("held_at")),
                        ("hold_until__isnull", False),
                        ("state", "held"),
                    ),
                    models.Q(
                        models.Q(("state", "held"), _negated=True),
                        ("held_at__isnull", True),
                        ("hold_reason__isnull", True),
                        ("hold_until__isnull", True),
                    ),
                    _connector="OR",
                ),
                name="item_hold_columns_match_state",
            ),
        ),
        migrations.AddConstraint(
            model_name="holdreason",
            constraint=models.UniqueConstraint(
                fields=("queue", "code"), name="holdreason_unique_per_queue"
            ),
        ),
        migrations.AddConstraint(
            model_name="holdreason",
            constraint=models.UniqueConstraint(fields=("id", "queue"), name="holdreason_id_queue"),
        ),
        # A hold reason belongs to the held item's queue, whatever code writes the row.
        migrations.RunSQL(
            """
            ALTER TABLE queue_app_reviewitem
              ADD CONSTRAINT item_hold_reason_same_queue
              FOREIGN KEY (hold_reason_id, queue_id) REFERENCES queue_app_holdreason (id, queue_id);
            """,
            "ALTER TABLE queue_app_reviewitem DROP CONSTRAINT item_hold_reason_same_queue;",
        ),
    ]
