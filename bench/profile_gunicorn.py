"""gunicorn hooks for B8's profile: cProfile each worker's requests, one file per worker.

Only the reviewer cycle's requests are profiled: not logging in (a password hash is most of a
login, and a reviewer logs in once a day), and not the time a worker waits for a request.

    gunicorn reviewconsole.wsgi -c bench/profile_gunicorn.py   (B8_PROFILE_DIR=... set)
"""

from __future__ import annotations

import cProfile
import os
from typing import Any


def post_worker_init(worker: Any) -> None:
    worker.profiler = cProfile.Profile()


def pre_request(worker: Any, req: Any) -> None:
    if not req.path.startswith("/accounts/"):
        worker.profiler.enable()


def post_request(worker: Any, req: Any, environ: Any, resp: Any) -> None:
    worker.profiler.disable()


def worker_exit(server: Any, worker: Any) -> None:
    profiler = getattr(worker, "profiler", None)
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(os.path.join(os.environ["B8_PROFILE_DIR"], f"{worker.pid}.prof"))
