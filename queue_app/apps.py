from django.apps import AppConfig


class QueueAppConfig(AppConfig):
    name = "queue_app"
    verbose_name = "Review queue"
    default_auto_field = "django.db.models.BigAutoField"
