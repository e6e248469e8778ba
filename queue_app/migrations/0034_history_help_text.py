"""The queue history's not-yet-tracked columns say so without naming a migration (help text only)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("queue_app", "0033_decide_rules_in_sql"),
    ]

    operations = [
        migrations.AlterField(
            model_name="queueconfigevent",
            name="default_sla",
            field=models.DurationField(
                help_text="Empty on events recorded before the history began tracking it.",
                null=True,
            ),
        ),
        migrations.AlterField(
            model_name="queueconfigevent",
            name="max_hold",
            field=models.DurationField(
                help_text="Empty on events recorded before the history began tracking it.",
                null=True,
            ),
        ),
        migrations.AlterField(
            model_name="queueconfigevent",
            name="qa_rate",
            field=models.DecimalField(
                decimal_places=2,
                help_text="Empty on events recorded before the history began tracking it.",
                max_digits=5,
                null=True,
            ),
        ),
        migrations.AlterField(
            model_name="queueconfigevent",
            name="sensitive",
            field=models.BooleanField(
                help_text="Empty on events recorded before the history began tracking it.",
                null=True,
            ),
        ),
        migrations.AlterField(
            model_name="queueconfigevent",
            name="sla_warning",
            field=models.DurationField(
                help_text="Empty on events recorded before the history began tracking it.",
                null=True,
            ),
        ),
    ]
