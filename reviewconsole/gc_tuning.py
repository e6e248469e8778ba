"""The cycle collector, set for processes that live for days: web workers and the apply worker.

CPython frees most objects by reference counting; its cycle collector exists for the rest, and
it runs on a count: every 700 container objects allocated (and not yet freed) it scans the
youngest generation, every tenth of those the middle one, and now and then all of them. A full
collection walks every object the process holds, and nearly all of them are what start-up
loaded (Django, the apps, URL patterns, compiled templates): alive until the process ends,
never garbage, walked again and again.

`tune()` runs once, when the process has loaded everything: one full collection, then
gc.freeze(), so that what survived it is never scanned again, and a young generation of
GC_GEN0_THRESHOLD allocations. Garbage in cycles (a caught exception and its traceback, say)
still goes: the collector still runs, each time the young generation fills.

Measured by bench/gc_share.py (one process, B8's reviewer cycle through the test client, the
settings alternating): the collector took 0.40-0.48 ms of CPU a cycle with the interpreter's
settings, 0.23 with the start-up frozen alone, and 0.13-0.17 frozen with a young generation of
5,000 to 50,000. B3's cycle through the services allocates too little to fill even 700 often.

Gunicorn imports the WSGI module in each worker, after the fork, so each worker freezes its own
start-up objects; with --preload the master freezes them before the workers share its memory
(the pattern gc.freeze's documentation describes).
"""

from __future__ import annotations

import gc

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

# The young generation's size, in container allocations (CPython's own is 700); the older
# generations keep their ratios (10, 10).
DEFAULT_GEN0_THRESHOLD = 20_000


def tune() -> None:
    """Freeze what the process has loaded and enlarge the young generation (once, at start).

    GC_GEN0_THRESHOLD = 0 leaves the interpreter's collector as it is.
    """
    # A process that never set Django up (a benchmark's peer) gets the default.
    threshold = (
        getattr(settings, "GC_GEN0_THRESHOLD", DEFAULT_GEN0_THRESHOLD)
        if settings.configured
        else DEFAULT_GEN0_THRESHOLD
    )
    if not isinstance(threshold, int) or isinstance(threshold, bool) or threshold < 0:
        raise ImproperlyConfigured(
            f"GC_GEN0_THRESHOLD must be a whole number of allocations, 0 to keep Python's "
            f"collector as it is; got {threshold!r}."
        )
    if threshold == 0:
        return
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(threshold, middle, old)
