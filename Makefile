# Two front doors: `make run` (the main job) and `make test` (the fast tier: every test but the `slow` ones,
# minutes); `make test-all` runs the whole suite, as .ci/run does. All set up .venv first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test test-all lint setup capture-deps clean study study-generated notebooks

$(BIN)/.installed: requirements.txt pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements.txt
	$(BIN)/pip install -q --no-deps -e .
	touch $@

setup: $(BIN)/.installed

run: setup
	$(BIN)/python -m harness.pipeline $(ARGS)

# the full miniature study (5 seeds, SFT matched on visits and on seconds, every task; hours on 2 cores),
# run by study/, beside the packages; a rerun continues it. Its tables and wall time
# land in $(STUDY)/study.md and study.json, and those result files are copied to $(RESULTS) (shipped).
STUDY ?= runs/study
RESULTS ?= docs/results/study
study: setup
	$(BIN)/python -m study --study $(STUDY) --results $(RESULTS) $(ARGS)

# the same study from the grounding base (grounding/base) on generated pages where the blind policy is weak:
# 1-3 shapes on 36 places told apart by colour (grounding.tasks writes the files; ~40 min on 2 cores)
GEN_DATA ?= runs/generated/data8d
study-generated: setup
	$(BIN)/python -m grounding.tasks --out $(GEN_DATA) --header --pages 8:1:3:colour --train-per-seed 40 \
		--heldout-seeds 15 --heldout-per-seed 14
	$(BIN)/python -m study --study runs/study_generated --seeds 0,1,2,3,4 --train-data $(GEN_DATA)/train.parquet \
		--heldout-data $(GEN_DATA)/heldout.parquet --set base_model=grounding/base --set "tasks=[colour]" \
		--set train_vision=false --set sft_lr=1e-4 --set online_episodes=0 --results docs/results/study_generated $(ARGS)
	for how in seeing blind; do \
		$(BIN)/python -m gui_r1_lite.evaluate --data $(GEN_DATA)/heldout.parquet --model grounding/base --device cpu \
			--min-pixels 37632 --max-pixels 37632 --out runs/study_generated/base_$$how $$([ $$how = blind ] && echo --blind) \
			&& mkdir -p docs/results/study_generated/base_$$how \
			&& cp runs/study_generated/base_$$how/metrics.json docs/results/study_generated/base_$$how/ || exit 1; done
	cp $(GEN_DATA)/data_report.json docs/results/study_generated/

# the executed pages in notebooks/executed/ (a cpu-mini run of the main job as Markdown, figures as PNG)
notebooks: setup
	$(BIN)/python scripts/executed_notebooks.py $(ARGS)

# the slowest tests of the run are listed at its end (--durations): what to mark `slow` when the fast tier grows
test: setup
	$(BIN)/python -m pytest -m "not slow" --durations=15 $(ARGS)

test-all: setup
	$(BIN)/python -m pytest --durations=25 $(ARGS)

lint: setup
	$(BIN)/ruff check .

capture-deps: setup
	bash scripts/install_capture_deps.sh

clean:
	rm -rf $(VENV) runs .pytest_cache
