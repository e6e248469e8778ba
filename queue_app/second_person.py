"""Second-person controls, the pure parts: the QA draw and the agreement figures (Cohen's
kappa, Wilson intervals). No database access here; the operations are in
queue_app/services/lanes.py and the statements in queue_app/db/statements/lanes.py. Whether a
decision needs a check is the database's queue_app_check_needed, which the decide calls.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any
from uuid import UUID

from django.conf import settings
from django.utils.crypto import salted_hmac

# Verdicts a blind QA review can reproduce and an adjudication can correct. An escalation is a
# hand-off, not an outcome: it is not drawn.
QA_VERDICTS = ("approve", "reject")

# The salt of the QA draw's key (see qa_draw).
QA_DRAW_SALT = "queue_app.second_person.qa_draw"


def qa_draw(*, item_id: int, lease_token: UUID | str) -> int:
    """The decision's QA draw: a 64-bit integer, uniform, reproducible, unpredictable.

    HMAC-SHA256 keyed by a key derived from SECRET_KEY (django's salted_hmac), over the item id
    and the lease token that fenced the decision; both are stored with the decision, so anyone
    holding the key can recompute every draw, and nobody without it can tell in advance which
    decisions will be sampled. The first 8 bytes of an HMAC-SHA256 are uniform over
    [0, 2**64): the draw has no bias towards any reviewer, verdict or time.
    """
    digest = salted_hmac(
        QA_DRAW_SALT, f"{item_id}:{lease_token}", secret=settings.SECRET_KEY, algorithm="sha256"
    ).digest()
    return int.from_bytes(digest[:8], "big")


# What an automatic decision's draw is keyed on in place of a lease token: it had no lease, and
# an item is decided automatically at most once (at intake), so the item id alone is unique.
AUTOMATIC_DRAW = "automatic"


def automatic_qa_draw(*, item_id: int) -> int:
    """The QA draw of the automatic decision on this item (qa_draw, reproducible the same way)."""
    return qa_draw(item_id=item_id, lease_token=AUTOMATIC_DRAW)


def draw_samples(draw: int, rate_percent: Decimal | int | str) -> bool:
    """Whether a draw falls below a rate given in percent (two decimals), decided exactly.

    draw / 2**64 < rate / 100, in integers: draw * 10000 < hundredths-of-a-percent * 2**64.
    """
    try:
        hundredths = int((Decimal(str(rate_percent)) * 100).to_integral_value())
    except InvalidOperation:
        return False
    return draw * 10000 < hundredths * 2**64


def qa_sampled(
    *, item_id: int, lease_token: UUID | str | None, verdict: str, rate_percent: Any
) -> bool:
    """Whether this decision is drawn for a blind QA review (see qa_draw)."""
    if verdict not in QA_VERDICTS or lease_token is None or not rate_percent:
        return False
    return draw_samples(qa_draw(item_id=item_id, lease_token=lease_token), rate_percent)


# -- agreement ------------------------------------------------------------------------------------

Z95 = 1.959963984540054  # the standard normal's 97.5th percentile


@dataclass(frozen=True)
class Rate:
    """A proportion with its Wilson 95 % interval (None when there is no sample)."""

    hits: int
    n: int

    @property
    def value(self) -> float | None:
        return self.hits / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.hits, self.n)


def wilson_interval(hits: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval for hits out of n (95 % by default); None for n = 0.

    Unlike the normal approximation it stays inside [0, 1] and is honest for small samples
    and for rates near 0 or 1, which is where QA agreement lives.
    """
    if n <= 0:
        return None
    p = hits / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def cohens_kappa(pairs: Iterable[tuple[str, str]]) -> float | None:
    """Cohen's kappa for two raters' labels on the same cases; None when undefined.

    kappa = (p_o - p_e) / (1 - p_e): observed agreement p_o against the agreement p_e expected
    by chance from each rater's own label frequencies. Undefined with no cases, or when chance
    agreement is already 1 (both raters used one and the same label throughout).
    """
    table: dict[tuple[str, str], int] = {}
    for a, b in pairs:
        table[(a, b)] = table.get((a, b), 0) + 1
    return kappa_from_table(table)


def kappa_from_table(table: Mapping[tuple[str, str], int]) -> float | None:
    """Cohen's kappa from a contingency table {(first label, second label): count}."""
    n = sum(table.values())
    if n == 0:
        return None
    labels: Sequence[str] = sorted({a for a, _ in table} | {b for _, b in table})
    observed = sum(table.get((label, label), 0) for label in labels) / n
    first = {label: sum(c for (a, _), c in table.items() if a == label) for label in labels}
    second = {label: sum(c for (_, b), c in table.items() if b == label) for label in labels}
    expected = sum(first[label] * second[label] for label in labels) / (n * n)
    if expected >= 1:
        return None
    return (observed - expected) / (1 - expected)
