# make demo: create .venv if needed, then mine LibreOffice help (en-de) with the default encoder.
# make test: create .venv if needed, then run the tests (slow ones excluded; `make test-slow` runs them).
# make lint: ruff over the code (settings in pyproject.toml, [tool.ruff]).
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-slow lint bench clean-venv browser student-general general-caps docs

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "make: $(PYTHON) not found (set PYTHON=...)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[train,test,ray]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/bisent demo

# make docs: the documentation site (mkdocs.yml, docs/) built strictly into build/site/; installs the docs extra once.
DOCS_STAMP := $(VENV)/.docs-installed
SITE       ?= build/site

$(DOCS_STAMP): $(STAMP) pyproject.toml
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir $(SITE)

# The browser test opens a report in Debian's headless Chromium (skipped when none is installed).
# Installing it is tried once, quietly, where apt-get runs as root; a failure does not fail the run.
browser:
	@command -v chromium-headless-shell >/dev/null 2>&1 || command -v chromium >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	    (DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium-headless-shell >/dev/null 2>&1 || \
	     (apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium-headless-shell >/dev/null 2>&1)) \
	  || echo "make: no headless Chromium (apt-get install chromium-headless-shell); the browser test will be skipped"; }

test: $(STAMP) $(DOCS_STAMP) browser
	$(BIN)/python -m pytest -q

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks tools

clean-venv:
	rm -rf $(VENV)

# make -j2 student-general: the general student of the student-general recipe (docs/models/student.md), end to
# end: the collection, SEEDS runs from scratch (1 thread each: -j2 runs two at a time on 2 cores) in $(RUNS) and
# `bisent ensemble` of them into $(OUT)/student-general (use it as -e $(OUT)/student-general; one seed is linked, not
# joined). A run that stopped (a crash, Ctrl-C) resumes from its checkpoint on the next make; sN.done marks a finished run
# (its 3 GB training checkpoint removed). An $(OUT)/student-general that make did not build is never replaced.
# The teacher's rows and hard negatives are computed once first ($(RUNS)/prepared, `bisent train --prepare-only`).
# Each seed N also hashes its features with model.hash_seed=N: members that collide on different features make an
# ensemble that averages those errors out (docs/models/student.md).
# Override on the command line: make -j2 student-general SEEDS="1 2 3" OUT=DIR STUDENT_SET="--set KEY=VALUE"
# PREP_WORKERS=N (processes embedding with the teacher; one core each).
OUT         := out
# six seeds: three pairs of about 26 minutes on 2 cores, 1:34:16 end to end from an empty cache
# (docs/models/student.md)
SEEDS       := 1 2 3 4 5 6
STUDENT_SET :=
PREP_WORKERS := 2
GENERAL     := $(OUT)/general
RUNS        := $(OUT)/student-general-runs
# A collection is built once. Its GENERAL_CAPS are kept in $(GENERAL).caps; a make with other caps stops and says what
# to remove ($(GENERAL), $(RUNS), $(OUT)/student-general), so that no student is trained on a collection other than
# the one asked for. A collection without a .caps file is not checked.
GENERAL_CAPS := --word-lists as-listed --cap words=30000 --cap words:ja=100000 --cap words:ru=100000 --cap ui-apps=10000 \
    --cap ui-apps:zh-cn=60000 --cap ui-apps:ja=60000 --cap ui-apps:ko=60000 --cap man:ja=60000 --cap man:zh-cn=30000

# the caps as written to and compared with $(GENERAL).caps: one line, spaces as make leaves them
CAPS_LINE = $(strip $(GENERAL_CAPS))

$(GENERAL)/stats.json: | $(STAMP) general-caps
	$(BIN)/bisent data general $(GENERAL_CAPS) -o $(GENERAL)
	printf '%s\n' '$(CAPS_LINE)' > $(GENERAL).caps

general-caps:
	@if [ -e $(GENERAL).caps ] && [ "$$(cat $(GENERAL).caps)" != '$(CAPS_LINE)' ]; then \
	  echo "make: $(GENERAL) was built with other GENERAL_CAPS ($(GENERAL).caps: $$(cat $(GENERAL).caps));" \
	    "remove $(GENERAL) $(GENERAL).caps $(RUNS) $(OUT)/student-general to build them with these, or set OUT=DIR"; exit 1; fi

$(OUT)/data/en-de/dev.tsv: | $(STAMP)
	$(BIN)/bisent data libreoffice --src-lang en --tgt-lang de -o $(OUT)/data/en-de

GENERAL_DATA = $$(for f in $(GENERAL)/train.*.tsv; do echo --train $$f; done) \
    $$(for f in $(GENERAL)/mono.*.txt $(GENERAL)/words.*.txt; do echo --mono $$f; done)

# Once, before the seeds: the teacher's rows (PREP_WORKERS processes) and its hard negatives into their caches;
# the seeds read them back instead of each computing the same ones side by side.
$(RUNS)/prepared/prepared.json: $(GENERAL)/stats.json
	$(BIN)/bisent train -c student-general $(GENERAL_DATA) \
	    --set objectives.teacher_workers=$(PREP_WORKERS) $(STUDENT_SET) --prepare-only -o $(RUNS)/prepared

$(RUNS)/s%.done: $(GENERAL)/stats.json $(OUT)/data/en-de/dev.tsv $(RUNS)/prepared/prepared.json
	$(BIN)/bisent train -c student-general $(GENERAL_DATA) \
	    --dev $(OUT)/data/en-de/dev.tsv --set seed=$* --set model.hash_seed=$* $(STUDENT_SET) -o $(RUNS)/s$* \
	    $$(test -f $(RUNS)/s$*/checkpoint.safetensors && echo --resume)
	rm -f $(RUNS)/s$*/checkpoint.safetensors
	touch $@

$(OUT)/student-general/config.json: $(foreach s,$(SEEDS),$(RUNS)/s$(s).done)
	@if [ -e $(@D) ] && [ ! -e $(RUNS)/joined ]; then \
	  echo "make: $(@D) exists and make did not build it; move it away or set OUT=DIR"; exit 1; fi
	rm -rf $(@D)
	$(if $(word 2,$(SEEDS)),$(BIN)/bisent ensemble $(foreach s,$(SEEDS),$(RUNS)/s$(s)) -o $(@D),cp -rl $(RUNS)/s$(strip $(SEEDS)) $(@D))
	touch $(RUNS)/joined

student-general: $(OUT)/student-general/config.json
