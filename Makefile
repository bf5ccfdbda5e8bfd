# make demo: create .venv if needed, then mine LibreOffice help (en-de) with the default encoder.
# make test: create .venv if needed, then run the tests (slow ones excluded; `make test-slow` runs them).
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-slow bench clean-venv

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "make: $(PYTHON) not found (set PYTHON=...)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[train,test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/bisent demo

test: $(STAMP)
	$(BIN)/python -m pytest -q

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

clean-venv:
	rm -rf $(VENV)
