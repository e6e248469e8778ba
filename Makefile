# Two commands do everything on a fresh machine:
#   make run   - embedded PostgreSQL (unless DATABASE_URL is set), demo data, web + apply worker
#                (make run SSO=1: also the tests' OIDC provider, to sign in through single sign-on)
#   make test  - the whole test suite, browser tests included
# Both create the virtual environment and install the project on first use; `make test` also
# finds or installs the Chromium the browser tests drive (bin/ensure-browser) and the nginx and
# systemd-analyze the deployment tests read deploy/ with (bin/ensure-tools). Each step says
# what it does on a line starting with "==>".

VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=
PAGES ?=
PORT ?= 8000
SSO ?=

.PHONY: run test browser lint sql schema install lock stop clean screenshots lighthouse

# pip is twice quiet: setuptools' ten-line notice about editable installs (and warnings about
# an index folder pip.conf names but this machine lacks) are not steps; errors still show.
# The versions are constraints.txt's: what the suite last passed with (`make lock` renews them).
$(VENV)/.installed: pyproject.toml constraints.txt
	@if [ -x $(PY) ]; then echo "==> using virtualenv $(VENV)"; \
	else echo "==> creating virtualenv $(VENV)"; python3 -m venv $(VENV) || { \
	  echo "==> could not create $(VENV): install Python 3.11+ with venv (Debian: apt-get install python3-venv)"; \
	  exit 1; }; fi
	@echo "==> installing Python packages (pip install -c constraints.txt -e '.[dev]', a minute on first use)"
	@$(VENV)/bin/pip install --quiet --quiet --upgrade pip
	@$(VENV)/bin/pip install --quiet --quiet -c constraints.txt -e '.[dev]'
	@touch $@

install: $(VENV)/.installed

run: install
	@PORT=$(PORT) PY=$(PY) SSO=$(SSO) bin/run

# The browser's path goes to the tests as REVIEW_BROWSER; a missing browser stops here, with the
# command to run, before any test starts.
test: install
	@bin/ensure-tools
	@browser="$$($(PY) bin/ensure-browser)" && \
	echo "==> running the tests: $(strip $(PY) -m pytest $(PYTEST_ARGS))" && \
	REVIEW_BROWSER="$$browser" $(PY) -m pytest $(PYTEST_ARGS)

browser: install
	@$(PY) bin/ensure-browser >/dev/null

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

# docs/screenshots/*.png from the demo (bin/screenshots: its own database, gunicorn, Chromium).
screenshots: install
	@$(PY) bin/screenshots $(PAGES)

# docs/lighthouse.md: Lighthouse (npm, pinned, into var/node) on home and the item page of the
# demo, mobile and desktop presets, against the local Chromium (bin/lighthouse).
lighthouse: install
	@PY=$(PY) $(PY) bin/lighthouse

# Rewrite queue_app/db/statements.sql, the final text of every named statement, from the code
# (tests/db/test_statements_file.py fails until it is committed with the change).
sql: install
	@$(PY) -m queue_app.db.render

# queue_app/db/schema.sql: the schema's functions, triggers, constraints and views as the
# migrated database (the embedded one unless DATABASE_URL is set) defines them. Run it after
# adding a migration that changes a rule, and commit the file; tests/db/test_schema_file.py
# fails until then.
schema: install
	@echo "==> database: applying migrations"
	@$(PY) manage.py migrate --noinput -v0
	@echo "==> writing queue_app/db/schema.sql from the migrated database"
	@$(PY) manage.py render_schema -v0

# The newest versions pyproject.toml allows, resolved in a scratch virtualenv and written to
# constraints.txt (its comment lines kept). Then `make test`, and commit both.
LOCK_VENV := var/lock-venv
lock:
	@echo "==> resolving the newest versions pyproject.toml allows (scratch virtualenv $(LOCK_VENV))"
	@rm -rf $(LOCK_VENV) && python3 -m venv $(LOCK_VENV)
	@$(LOCK_VENV)/bin/pip install --quiet --quiet --upgrade pip
	@$(LOCK_VENV)/bin/pip install --quiet --quiet -e '.[dev]'
	@{ grep '^#' constraints.txt; $(LOCK_VENV)/bin/pip freeze --exclude-editable; } > constraints.txt.new
	@mv constraints.txt.new constraints.txt && rm -rf $(LOCK_VENV)
	@echo "==> wrote constraints.txt; now make test (it installs them), then commit it"

# Stop the embedded PostgreSQL under var/pg (make run and make test leave it running).
stop:
	@PY=$(PY) bin/stop-db

clean: stop
	@echo "==> removing $(VENV), var/, .pytest_cache and the egg-info pip left"
	@rm -rf $(VENV) var .pytest_cache *.egg-info
