# nmtscale: the two commands a new user needs are `make all` (set up, run every chapter at the default
# scale from the committed results, training only runs not recorded, build the HTML book) and `make test`
# (set up, lint, unit tests, smoke-execute the book, check it). `make reproduce` trains everything again.
SHELL := /bin/bash
PY := .venv/bin/python
SCALE ?= cpu
NAME ?=
ARGS ?=

# apt-get needs root: use sudo when not running as root.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: setup all reproduce test lint unit chapter html check smoke chromium clean

setup: .venv/.installed

.venv/.installed: requirements.txt pyproject.toml
	test -x $(PY) || python3.11 -m venv .venv
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -e .
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

# Main job: every chapter at $(SCALE) (default cpu) through papermill, reading recorded runs from results/
# and training only the missing ones, then the HTML book, offline.
all: setup
	$(PY) -m nmtscale book run --scale $(SCALE)
	$(PY) -m nmtscale book html --scale $(SCALE)

# Train every run again from scratch into retrain/ (the committed results are neither read nor touched),
# re-execute the chapters on them, then compare the two stores run by run in seed standard deviations.
# One chapter: make reproduce NAME=01_bivariate_laws. Interrupted, it resumes where it stopped.
reproduce: setup
	$(PY) -m nmtscale book run --retrain --scale $(SCALE) $(if $(NAME),--chapter $(NAME)) $(ARGS)

# One chapter: make chapter NAME=01_bivariate_laws SCALE=cpu ARGS="-p n_seeds 3"
chapter: setup
	$(PY) -m nmtscale book run --scale $(SCALE) --chapter $(NAME) $(ARGS)

# Build the HTML from the executed notebooks already in the repository, without training.
html: setup
	$(PY) -m nmtscale book html --scale $(SCALE)

# Open every page of the built book in headless Chromium, offline, at a 1400 px window: every chart must draw,
# every chart and table must fit the text column (~772 px, measured on each page), and no page's outputs may
# show a warning, a traceback or a machine's path (screenshots in _build/).
check: setup chromium
	$(PY) -m nmtscale book check --scale $(SCALE)

lint: setup
	$(PY) -m ruff check src tests benchmarks book
	$(PY) -m ruff format --check src tests benchmarks book

unit: setup
	$(PY) -m pytest -q -m "not book"

# Smoke-execute every chapter, build that book, check every chart draws in headless Chromium.
# Screenshots of every page (the CI artifact) land in _build/smoke/screenshots/.
smoke: setup chromium
	$(PY) -m pytest -q -m book

# The chart check needs Chromium (Debian package `chromium`); install it when it is missing.
chromium:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  echo "chromium is missing: installing the Debian package"; \
	  $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q chromium; } || { \
	  echo "error: could not install chromium; run 'apt-get install -y chromium' as root." \
	       "The smoke test needs it to check that every chart of the book draws." >&2; exit 1; }

test: lint unit smoke

clean:
	rm -rf _build runs cache retrain
