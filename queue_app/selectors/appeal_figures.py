"""Appeals as operators and auditors count them, per queue (/ops/ and /metrics).

Received, pending, past their deadline, the reversed share of those decided with its Wilson
interval (the helper the oversight figures use: honest for the small numbers appeals come in),
and the median time from receipt to a decision; and the reversals whose overturn its checker
returned, which an operator must take up (the lane cannot decide them again).
"""

from __future__ import annotations

from dataclasses import dataclass

from queue_app.db.runner import fetch_dicts
from queue_app.db.statements import appeals as appeals_sql
from queue_app.second_person import wilson_interval


@dataclass(frozen=True)
class AppealFigures:
    queue: str
    received: int
    pending: int
    past_deadline: int
    decided: int
    reversed: int
    median_seconds: float | None
    notices_dead: int
    # Reversals whose overturn its checker returned: not final, their notice held.
    reversals_returned: int = 0

    @property
    def reversed_share(self) -> float | None:
        return self.reversed / self.decided if self.decided else None

    @property
    def reversed_interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.reversed, self.decided)

    @property
    def reversed_words(self) -> str:
        """Say "2 of 5 (40 %, 95 % CI 12-77 %)", or a dash when none was decided."""
        share, interval = self.reversed_share, self.reversed_interval
        if share is None or interval is None:
            return "\u2014"
        low, high = interval
        words = f"{self.reversed} of {self.decided} ({share:.0%}, 95% CI {low:.0%}\u2013{high:.0%})"
        return words.replace("%", "\u00a0%")

    @property
    def median_words(self) -> str:
        """The median time to decide in the largest sensible units ("2 d 4 h"), or a dash."""
        if self.median_seconds is None:
            return "\u2014"
        seconds = int(self.median_seconds)
        days, rest = divmod(seconds, 86400)
        hours, rest = divmod(rest, 3600)
        minutes, seconds = divmod(rest, 60)
        if days:
            return f"{days} d {hours} h"
        if hours:
            return f"{hours} h {minutes} min"
        if minutes:
            return f"{minutes} min"
        return f"{seconds} s"


def read_appeal_figures() -> list[AppealFigures]:
    """Return the figures of every queue that has received an appeal, by queue slug."""
    return [
        AppealFigures(
            queue=row["slug"],
            received=row["received"],
            pending=row["pending"],
            past_deadline=row["past_deadline"],
            decided=row["decided"],
            reversed=row["reversed"],
            median_seconds=(
                float(row["median_seconds"]) if row["median_seconds"] is not None else None
            ),
            notices_dead=row["notices_dead"],
            reversals_returned=row["reversals_returned"],
        )
        for row in fetch_dicts(appeals_sql.APPEAL_FIGURES, {})
    ]
