# The two set-up commands of the README: `make release` (the main job) and `make test`; `make check` is the fast set.
# Each creates .venv with every pinned dependency on first use (torch is the local CPU wheel).
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed
export COHBENCH_MIRROR ?= ../shared/data/mirror
export DVC_NO_ANALYTICS := 1

.PHONY: release test check

# The fast set: every test but those pyproject.toml marks as taking longer (its `markers`).
FAST_SET := not integration and not slow and not wheel_install

# --no-compile: Python compiles a module on its first import instead, so only the modules a run imports are compiled
# (pip compiling all 2.2 GB of packages took 56 of the install's 115 s).
$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --no-compile torch==2.13.0 -r requirements.lock
	$(VENV)/bin/pip install --quiet --no-deps -e '.[test,scale]'
	$(VENV)/bin/pip check
	touch $@

# Unbuffered so that each stage's progress shows as it happens, also through a pipe.
# Builds, checks and trains with `dvc repro`, then sends the release's data to the release store (.dvc/config).
release: $(STAMP)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" PYTHONUNBUFFERED=1 dvc repro
	$(VENV)/bin/cohbench push

# pytest exits 5 when it collects no test: a run that checked nothing fails, saying so plainly.
NOTHING_CHECKED_FAILS = { rc=$$?; [ $$rc -ne 5 ] || echo "pytest collected no tests: nothing was checked" >&2; exit $$rc; }

test: $(STAMP)
	$(VENV)/bin/pytest || $(NOTHING_CHECKED_FAILS)

# A developer's inner loop; `make test` (and CI) still runs every test.
check: $(STAMP)
	$(VENV)/bin/pytest -m "$(FAST_SET)" || $(NOTHING_CHECKED_FAILS)
