# Two commands do everything on a fresh machine:
#   make run   - embedded PostgreSQL (unless DATABASE_URL is set), demo data, web + apply worker
#   make test  - the whole test suite
# Both create the virtual environment and install the project on first use.

VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=
PORT ?= 8000

.PHONY: run test lint install clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[dev]'
	touch $@

install: $(VENV)/.installed

run: install
	PORT=$(PORT) bin/run

test: install
	$(PY) -m pytest $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

clean:
	rm -rf $(VENV) var .pytest_cache
