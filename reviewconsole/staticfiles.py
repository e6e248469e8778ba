"""Static files through WhiteNoise, with or without `collectstatic` having run."""

from __future__ import annotations

import os
from typing import Any

from whitenoise.middleware import WhiteNoiseMiddleware


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    """Serve STATIC_ROOT once collected; before that, serve straight from the app folders.

    `make run` collects (compressed files, long cache headers). Tests, `manage.py runserver`
    and a fresh clone have no STATIC_ROOT yet; plain WhiteNoise then warns on every process
    start and serves nothing, so pages lose their CSS. Falling back to Django's finders
    serves the same files uncompressed. Any other missing folder still warns.
    """

    def add_files(self, root: Any, prefix: str | None = None) -> None:
        if root == self.static_root and not os.path.isdir(root):
            self.use_finders = True
            return
        super().add_files(root, prefix)
