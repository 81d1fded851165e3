# flexjob developer commands. `make test` and `make run` work on a fresh machine.
PY ?= python3
SRC_DIRS := $(wildcard flexjob tests benchmarks examples)
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv test lint typecheck unit run proto clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check $(SRC_DIRS)
	$(BIN)/ruff format --check $(SRC_DIRS)

typecheck: $(STAMP)
	$(BIN)/mypy flexjob

unit: $(STAMP)
	$(BIN)/python -m pytest -q

test: lint typecheck unit

run: $(STAMP)
	$(BIN)/python -m flexjob run --nnodes 2 examples/digits_ddp.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache

bench-operator: $(STAMP)
	PYTHONPATH=. $(BIN)/python benchmarks/operator_scale.py --jobs 100 --replicas 50

proto: $(STAMP)
	$(BIN)/python -m flexjob.rpc.protogen
