"""Names as the README spells them: "API clients", and "max in flight" for the in-flight limit.

State only (verbose names and help text): no SQL runs and no row is touched.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("queue_app", "0008_review_polish"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="apiclient",
            options={
                "ordering": ["name"],
                "verbose_name": "API client",
                "verbose_name_plural": "API clients",
            },
        ),
        migrations.AlterField(
            model_name="queue",
            name="max_in_flight",
            field=models.PositiveIntegerField(
                default=1000,
                help_text="The most items leased at once; operators are warned near it.",
                verbose_name="max in flight",
            ),
        ),
    ]
