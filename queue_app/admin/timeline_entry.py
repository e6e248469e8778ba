"""One line of an item's timeline, as the item's own lines and its lane lines both give them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from queue_app.models import Decision


@dataclass
class Entry:
    """One line of the timeline."""

    at: datetime
    kind: str  # css class and icon: event, decision, overturn, applied, pending, dead
    title: str
    who: str = ""
    details: list[str] = field(default_factory=list)
    decision: Decision | None = None
