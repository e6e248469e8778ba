"""Save a reviewer's wellness preferences (how a sensitive queue's images are shown to them)."""

from __future__ import annotations

from django.db import transaction

from queue_app.errors import InvalidBounds
from queue_app.models import ReviewerPreferences, VeilBlur
from queue_app.services._common import User


def preferences_save(
    *, user: User, blur: str, greyscale: bool | None, autoplay: bool | None
) -> ReviewerPreferences:
    """Store my choices; an empty blur and None elsewhere mean "the queue's default"."""
    if blur not in ("", *VeilBlur.values):
        raise InvalidBounds(f"The blur must be one of {', '.join(VeilBlur.values)}, or empty.")
    with transaction.atomic():
        saved, _created = ReviewerPreferences.objects.update_or_create(
            user_id=user.pk,
            defaults={"blur": blur, "greyscale": greyscale, "autoplay": autoplay},
        )
    return saved
