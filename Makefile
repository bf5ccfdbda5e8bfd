# make demo: create .venv if needed, then mine LibreOffice help (en-de) with the default encoder.
# make test: create .venv if needed, then run the tests (slow ones excluded; `make test-slow` runs them).
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-slow bench clean-venv browser

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "make: $(PYTHON) not found (set PYTHON=...)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[train,test,ray]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/bisent demo

# The browser test opens a report in Debian's headless Chromium (skipped when none is installed).
# Installing it is tried once, quietly, where apt-get runs as root; a failure does not fail the run.
browser:
	@command -v chromium-headless-shell >/dev/null 2>&1 || command -v chromium >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	    (DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium-headless-shell >/dev/null 2>&1 || \
	     (apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium-headless-shell >/dev/null 2>&1)) \
	  || echo "make: no headless Chromium (apt-get install chromium-headless-shell); the browser test will be skipped"; }

test: $(STAMP) browser
	$(BIN)/python -m pytest -q

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

clean-venv:
	rm -rf $(VENV)
