# Two commands for a fresh machine: `make demo` and `make test`.
# VENV=/elsewhere puts the environment elsewhere (scripts/setup.sh reads it too)
VENV ?= .venv
export VENV
PY := $(VENV)/bin/python
SC := $(VENV)/bin/sourcecheckup
DEMO_DB ?= $(CURDIR)/demo.db

# the frozen app (build.spec): built into $(DIST)/SourceCheckup, checked verdict by verdict against this tree
DIST ?= $(CURDIR)/dist
BUNDLE := $(DIST)/SourceCheckup
# a fresh venv for `make wheel-check` (pip install . as a user would, torch first from the CPU index)
WHEEL_VENV ?= $(CURDIR)/build/wheel-venv
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu

.PHONY: setup demo gui test bench screenshots clean dist dist-check wheel-check

setup:
	bash scripts/setup.sh

demo: setup
	$(SC) demo --db $(DEMO_DB) -o $(CURDIR)/sourcecheckup-demo-report.html
	@if [ -n "$$DISPLAY" ] || [ -n "$$WAYLAND_DISPLAY" ]; then $(SC) gui --db $(DEMO_DB); \
	  else echo "no display: open sourcecheckup-demo-report.html in a browser, or run 'make gui' on a desktop"; fi

gui: setup
	$(SC) gui --db $(DEMO_DB)

# the linter and the type checker ([tool.mypy] in pyproject.toml), then the suite, with the frozen-app build beside it in a second pytest process (scripts/run_tests.py)
test: setup
	$(VENV)/bin/ruff check sourcecheckup ui
	$(VENV)/bin/mypy
	QT_QPA_PLATFORM=offscreen $(PY) scripts/run_tests.py

bench: setup
	$(PY) bench/pipeline.py
	$(PY) bench/fetch.py
	$(PY) bench/judges.py
	$(PY) bench/local_judge.py --quick
	$(PY) bench/report.py
	$(PY) bench/benchmark.py
	QT_QPA_PLATFORM=offscreen $(PY) bench/ui_responsiveness.py
	$(PY) bench/judge_accuracy.py
	$(PY) bench/checks_speed.py
	$(PY) bench/hostile.py
	$(PY) bench/interrupt.py
	$(PY) bench/time_caps.py
	$(PY) bench/judge_speed.py
	$(PY) bench/scale.py --answers 2000
	$(PY) bench/scale.py --answers 300 --judge builtin
	$(PY) bench/interval_coverage.py
	$(PY) bench/verify_report.py

screenshots: setup
	xvfb-run -a -s "-screen 0 2000x1200x24" env QT_QPA_PLATFORM=xcb $(PY) scripts/screenshots.py
	xvfb-run -a -s "-screen 0 1400x900x24" env QT_QPA_PLATFORM=xcb $(PY) scripts/screenshot_references.py

dist: setup
	$(VENV)/bin/pyinstaller --noconfirm --distpath $(DIST) --workpath $(CURDIR)/build/pyinstaller build.spec
	@echo "built $(BUNDLE): the app $(BUNDLE)/SourceCheckup, the command line $(BUNDLE)/sourcecheckup-cli"

# the bundle's demo in a clean environment (env -i, no venv on PATH, no network where unshare allows) against
# this tree's: all 55 verdicts, every page read, and one pasted answer audited against a page on 127.0.0.1
dist-check: setup
	@[ -x $(BUNDLE)/sourcecheckup-cli ] || $(MAKE) dist
	$(PY) scripts/dist_check.py bundle $(BUNDLE)

# `pip install .` into a fresh venv, then the same comparison with its `sourcecheckup` command
wheel-check: setup
	[ -x $(WHEEL_VENV)/bin/python ] || python3 -m venv $(WHEEL_VENV)
	$(WHEEL_VENV)/bin/python -m pip install -q -U pip
	$(WHEEL_VENV)/bin/python -m pip install -q --timeout 15 --retries 1 --index-url $(TORCH_INDEX) torch==2.13.0 \
	  || $(WHEEL_VENV)/bin/python -m pip install -q torch==2.13.0
	$(WHEEL_VENV)/bin/python -m pip install -q .
	$(PY) scripts/dist_check.py command $(WHEEL_VENV)/bin/sourcecheckup

clean:
	rm -rf .venv build dist demo.db* sourcecheckup-demo-report.*
