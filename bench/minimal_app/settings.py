"""Settings of the minimal app: a database and a URLconf, nothing else."""

from __future__ import annotations

import environ

env = environ.Env()
SECRET_KEY = "bench-minimal-app-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["*"]
ROOT_URLCONF = "bench.minimal_app.urls"
INSTALLED_APPS: list[str] = []
MIDDLEWARE: list[str] = []
DATABASES = {"default": {**env.db_url("DATABASE_URL"), "CONN_MAX_AGE": 60}}
USE_TZ = True
