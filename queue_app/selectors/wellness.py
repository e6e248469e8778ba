"""Read how a reviewer's sensitive-queue images are shown: their own choice, else the queue's."""

from __future__ import annotations

from dataclasses import dataclass

from queue_app.models import Queue, ReviewerPreferences


@dataclass(frozen=True)
class Viewing:
    """How images are shown to one reviewer on one queue (the veil applies on sensitive ones)."""

    blur: str  # VeilBlur: none (covered), low, high
    greyscale: bool
    autoplay: bool


def preferences_of(*, user_id: int | None) -> ReviewerPreferences:
    """Return the reviewer's stored choices, or an unsaved row of empty ones (queue defaults)."""
    if user_id is None:  # nobody signed in: only the queue's defaults
        return ReviewerPreferences()
    found = ReviewerPreferences.objects.filter(user_id=user_id).first()
    return found if found is not None else ReviewerPreferences(user_id=user_id)


def viewing_for(*, user_id: int | None, queue: Queue) -> Viewing:
    """Return the reviewer's choices, each empty one taken from the queue's default."""
    mine = preferences_of(user_id=user_id)
    return Viewing(
        blur=mine.blur or queue.veil_blur,
        greyscale=queue.veil_greyscale if mine.greyscale is None else mine.greyscale,
        autoplay=queue.veil_autoplay if mine.autoplay is None else mine.autoplay,
    )
