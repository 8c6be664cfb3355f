# Two commands for a fresh machine: `make demo` and `make test`.
# VENV=/elsewhere puts the environment elsewhere (scripts/setup.sh reads it too)
VENV ?= .venv
export VENV
PY := $(VENV)/bin/python
SC := $(VENV)/bin/sourcecheckup
DEMO_DB ?= $(CURDIR)/demo.db

.PHONY: setup demo gui test bench screenshots clean

setup:
	bash scripts/setup.sh

demo: setup
	$(SC) demo --db $(DEMO_DB) -o $(CURDIR)/sourcecheckup-demo-report.html
	@if [ -n "$$DISPLAY" ] || [ -n "$$WAYLAND_DISPLAY" ]; then $(SC) gui --db $(DEMO_DB); \
	  else echo "no display: open sourcecheckup-demo-report.html in a browser, or run 'make gui' on a desktop"; fi

gui: setup
	$(SC) gui --db $(DEMO_DB)

test: setup
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q

bench: setup
	$(PY) bench/pipeline.py
	$(PY) bench/fetch.py
	$(PY) bench/judges.py
	$(PY) bench/local_judge.py --quick
	$(PY) bench/report.py
	$(PY) bench/benchmark.py
	QT_QPA_PLATFORM=offscreen $(PY) bench/ui_responsiveness.py
	$(PY) bench/judge_accuracy.py
	$(PY) bench/hostile.py

screenshots: setup
	xvfb-run -a -s "-screen 0 1400x900x24" env QT_QPA_PLATFORM=xcb $(PY) scripts/screenshots.py
	xvfb-run -a -s "-screen 0 1400x900x24" env QT_QPA_PLATFORM=xcb $(PY) scripts/screenshot_references.py

clean:
	rm -rf .venv build dist demo.db* sourcecheckup-demo-report.*
