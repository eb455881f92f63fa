# Two front doors: `make run` (the main job) and `make test`. Both set up .venv first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test lint setup capture-deps clean study notebooks

$(BIN)/.installed: requirements.txt pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements.txt
	$(BIN)/pip install -q --no-deps -e .
	touch $@

setup: $(BIN)/.installed

run: setup
	$(BIN)/python -m gui_r1_lite.pipeline $(ARGS)

# the full miniature study (5 seeds, SFT matched on visits and on seconds, every task; hours on 2 cores),
# run by the research harness beside the package (study/); a rerun continues it. Its tables and wall time
# land in $(STUDY)/study.md and study.json, and those result files are copied to $(RESULTS) (shipped).
STUDY ?= runs/study
RESULTS ?= docs/results/study
study: setup
	$(BIN)/python -m study --study $(STUDY) --results $(RESULTS) $(ARGS)

# the executed pages in notebooks/executed/ (a cpu-mini run of the main job as Markdown, figures as PNG)
notebooks: setup
	$(BIN)/python scripts/executed_notebooks.py $(ARGS)

test: setup
	$(BIN)/python -m pytest $(ARGS)

lint: setup
	$(BIN)/ruff check .

capture-deps: setup
	bash scripts/install_capture_deps.sh

clean:
	rm -rf $(VENV) runs .pytest_cache
