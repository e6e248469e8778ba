"""Reviewer wellness: how each reviewer wants a sensitive queue's images shown to them."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from queue_app.models.review import VeilBlur


class ReviewerPreferences(models.Model):
    """One reviewer's choices; an empty choice takes the queue's default (Queue.veil_*)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        primary_key=True,
        on_delete=models.CASCADE,
        related_name="review_preferences",
    )
    blur = models.CharField(max_length=8, choices=VeilBlur.choices, blank=True, default="")
    greyscale = models.BooleanField(null=True, blank=True)
    autoplay = models.BooleanField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "reviewer preferences"
        verbose_name_plural = "reviewer preferences"
        constraints = [
            models.CheckConstraint(
                condition=Q(blur__in=["", *(b.value for b in VeilBlur)]),
                name="reviewer_preferences_blur_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"preferences of user {self.user_id}"
