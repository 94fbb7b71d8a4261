# gavel: `make demo` builds gavel, generates a sample dataset and grades it;
# `make test` runs the whole test suite (every fuzz target's corpus among
# it), `make fuzz` runs every fuzz target briefly, `make test-slurm` the
# Slurm example on a real cluster (CI runs all three); `make wheel` builds
# the Python wheel with the binary inside, `make test-python` runs its
# tests (`make test-python-ray` with Ray Data installed, as CI runs them).

GO      ?= go
BIN     := bin/gavel
DEMO    := demo
ROLLOUTS ?= 20000

.PHONY: build wheel dist image docs test-python test-python-ray demo doctest test test-slurm test-emulators vet fmt-check fuzz bench bench-reuse bench-flags bench-turns bench-module bench-math bench-python-fn bench-compare bench-s3 loadtest clean

# The binary is static and stripped: no cgo, so no libc to match, and it
# runs on any Linux of its architecture. Only this build: `make test` keeps
# cgo for the race detector. -buildvcs=auto stamps the commit, which
# `gavel --version` prints, even where GOFLAGS turns stamping off.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=auto -ldflags='-s -w' -o $(BIN) ./cmd/gavel

# `make wheel` packs bin/gavel, as `make build` made it (run that first
# after changing Go code; CI builds the binary once and packs that file),
# into the Python package under python/ and builds a platform wheel in
# python/dist, tagged for the binary's architecture (python/hatch_build.py).
# The build tools live in a virtual environment under $(PY_VENV).
PYTHON   ?= python3
PY_VENV  ?= bin/venv
# Math-Verify and what it parses with are pinned: the table of its
# disagreements with the math check (docs/math.md) is of these versions.
# pandas and Polars too: what their JSON readers keep and change
# (docs/python.md, python/tests/test_readers.py) is of these versions.
PY_DEPS  := hatchling pyarrow pandas==3.1.1 polars==2.1.0 pytest mypy pyarrow-stubs pandas-stubs \
            math-verify==0.9.0 latex2sympy2_extended==1.11.0 sympy==1.14.0
PYTEST_ARGS ?=
$(PY_VENV)/.installed: Makefile
	$(PYTHON) -m venv $(PY_VENV)
	$(PY_VENV)/bin/python -m pip install -q --upgrade pip
	$(PY_VENV)/bin/python -m pip install -q $(PY_DEPS)
	touch $@

$(BIN):
	$(MAKE) build

wheel: $(PY_VENV)/.installed | $(BIN)
	rm -rf python/dist python/build python/src/gavel/bin
	install -D -m 0755 $(BIN) python/src/gavel/bin/gavel
	cd python && ../$(PY_VENV)/bin/python -m pip wheel -q --no-deps --no-build-isolation -w dist .
	@ls python/dist/*.whl

# `make test-python` installs the wheel of `make wheel` into $(PY_VENV),
# type-checks the package (mypy --strict) and runs its tests against the
# installed copy, never the source tree. PYTEST_ARGS passes pytest flags.
# The tests of gavel.ray are skipped when Ray is not installed, unless
# GAVEL_REQUIRE_RAY=1, which makes that a failure. The differential test
# of the math check against Math-Verify (installed with PY_DEPS) must run:
# GAVEL_REQUIRE_MATH_VERIFY=1 unless set otherwise.
GAVEL_REQUIRE_RAY ?=
GAVEL_REQUIRE_MATH_VERIFY ?= 1
test-python: wheel
	$(PY_VENV)/bin/python -m pip install -q --force-reinstall --no-deps python/dist/gavel-*.whl
	cd python && ../$(PY_VENV)/bin/python -m mypy src/gavel
	cd python && GAVEL_REQUIRE_RAY=$(GAVEL_REQUIRE_RAY) GAVEL_REQUIRE_MATH_VERIFY=$(GAVEL_REQUIRE_MATH_VERIFY) ../$(PY_VENV)/bin/python -m pytest -q $(PYTEST_ARGS)

# `make test-python-ray` is `make test-python` with Ray Data installed in
# $(PY_VENV) (a large install, kept for the next run) and its tests
# required: they start a local Ray cluster of 2 CPUs on 127.0.0.1 and stop
# it. mypy then checks gavel.ray against Ray's own annotations too.
PY_RAY ?= ray[data]>=2.9
test-python-ray: $(PY_VENV)/.installed
	$(PY_VENV)/bin/python -m pip install -q '$(PY_RAY)'
	$(MAKE) test-python GAVEL_REQUIRE_RAY=1

demo: build
	mkdir -p $(DEMO)
	$(BIN) gen --out $(DEMO)/rollouts.parquet --rollouts $(ROLLOUTS) --seed 1 --bad-share 0.01
	@echo "$(BIN) grade --out $(DEMO)/results $(DEMO)/rollouts.parquet"; \
	$(BIN) grade --out $(DEMO)/results $(DEMO)/rollouts.parquet; status=$$?; \
	case $$status in \
	  0) echo "gavel grade exited with status 0: every row graded, none with status error; results in $(DEMO)/results" ;; \
	  3) echo "gavel grade exited with status 3: some rows have status error, as the demo data asks; results in $(DEMO)/results" ;; \
	  *) echo "gavel grade exited with status $$status: the demo failed"; exit $$status ;; \
	esac

# The Kubernetes manifests under deploy/ are checked by a module of their
# own (deploy/go.mod), so the Kubernetes API packages stay out of gavel's.
# jsonview's tests and fuzz seeds also run on its portable stage 1 (the
# purego tag), and the generator of its assembly, a module of its own so
# that avo stays out of gavel's, checks that the committed assembly is what
# it writes.
# go test runs every fuzz target on its seed corpus (the f.Add seeds and
# testdata/fuzz) as an ordinary test; the fuzzing itself is `make fuzz`,
# which CI runs after this.
test: fmt-check vet
	$(GO) test -race -timeout 25m ./...
	$(GO) test -tags purego ./columnar/jsonview/
	cd columnar/jsonview/internal/asmgen && $(GO) vet ./... && $(GO) test ./...
	cd deploy && $(GO) vet ./... && $(GO) test ./...

# `make test-slurm` runs deploy/slurm-array.sh, unchanged, as a 4-task array
# on a single-node Slurm cluster it starts on 127.0.0.1 (installing
# slurm-wlm and munge when missing; root only, skipped otherwise), reading
# and writing an S3 server on 127.0.0.1 (s3fake), requeues a task mid-run,
# commits in a dependent job and compares the results with a single
# process's (deploy/test-slurm.sh). CI runs it after `make test`.
test-slurm: build
	$(GO) build -trimpath -o bin/s3fake ./internal/cmd/s3fake
	$(GO) build -trimpath -o bin/blobcp ./internal/cmd/blobcp
	timeout -k 60 600 deploy/test-slurm.sh

# `make test-emulators` installs Azurite (npm) and fake-gcs-server (go
# install, outside gavel's module) under $(EMU) when missing, and runs the
# azblob:// and gs:// tests against them, failing rather than skipping when
# an emulator does not start. Not in CI: the two installs take minutes.
EMU ?= bin/emulators
test-emulators:
	mkdir -p $(EMU)
	[ -x $(EMU)/node_modules/.bin/azurite-blob ] || npm install --prefix $(EMU) --no-audit --no-fund --silent azurite@3.35.0
	[ -x $(EMU)/fake-gcs-server ] || GOBIN=$(abspath $(EMU)) $(GO) install github.com/fsouza/fake-gcs-server@v1.56.1
	GAVEL_REQUIRE_EMULATORS=1 AZURITE_BLOB=$(abspath $(EMU))/node_modules/.bin/azurite-blob \
	  FAKE_GCS_SERVER=$(abspath $(EMU))/fake-gcs-server \
	  $(GO) test -count=1 -run 'TestAzblobOnAzurite|TestGCSOnFakeGCSServer' -v ./cli/

# `make doctest` runs every shell example of README.md and docs/ against
# the built binary and lists the blocks it skips, with their reasons.
doctest:
	$(GO) test -count=1 -v -run 'TestDocs' ./internal/doctest/ | grep -v '^=== RUN'

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "not gofmt-formatted:"; echo "$$out"; exit 1; fi

# Every fuzz target of every package runs briefly (found by name, so a new
# target joins without an edit here); its corpus lives under the package's
# testdata/fuzz. `make test` runs the corpora only (as go test does); CI
# runs this after it.
# A count of executions, not a duration: Go 1.26's fuzz coordinator can fail
# a target with a spurious "context deadline exceeded" when a duration
# expires while a worker is busy on a loaded machine (golang/go#75804).
FUZZTIME ?= 20000x
fuzz:
	@set -e; for dir in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
	  for name in $$(grep -h --include='*_test.go' -o '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go | sed 's/^func //'); do \
	    echo "fuzz $$dir $$name"; \
	    $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$dir/; \
	  done; \
	done

# `make bench-s3` grades one generated Parquet file of $(BENCH_ROLLOUTS)
# rollouts from local disk and from an S3 server on 127.0.0.1 (s3fake) in
# the same run and prints both rates, their ratio and the GETs per unit
# (bench/README.md).
bench-s3: build
	$(GO) build -trimpath -o bin/s3fake ./internal/cmd/s3fake
	bench/s3bench.sh $(BIN) bin/s3fake $(BENCH_DATA) $(BENCH_ROLLOUTS)

# `make bench` builds gavel and its peers, generates the CRM datasets into
# $(BENCH_DATA) (kept and reused), runs every peer as its own process and
# prints the comparison table (bench/README.md). ROLLOUTS=200000 make bench
# runs a smaller one. The DuckDB and pqarrow peers are a separate module
# (bench/duckdb, cgo), which `make test` never builds.
BENCH_DATA     ?= bench/data
BENCH_ROLLOUTS ?= $(if $(filter environment command line,$(origin ROLLOUTS)),$(ROLLOUTS),1000000)
bench: build
	$(GO) build -trimpath -o bin/bench-floor ./bench/cmd/floor
	$(GO) build -trimpath -o bin/bench-jsonmaps ./bench/cmd/jsonmaps
	$(GO) build -trimpath -o bin/bench-run ./bench/cmd/benchrun
	cd bench/duckdb && CGO_ENABLED=1 $(GO) build -trimpath -o ../../bin/bench-duckdb .
	cd bench/duckdb && $(GO) build -trimpath -o ../../bin/bench-pqarrowfloor ./pqarrowfloor
	bin/bench-run -rollouts $(BENCH_ROLLOUTS) -data $(BENCH_DATA) -bin bin -json $(BENCH_DATA)/results.json
	$(MAKE) bench-reuse
	$(MAKE) bench-module
	$(MAKE) bench-math
	$(MAKE) bench-python-fn
	$(MAKE) bench-flags
	$(MAKE) bench-turns

# `make bench-turns` (part of `make bench`) grades $(BENCH_TURNS_CHATS)
# generated chats of 6 to 20 agent turns with three expressions as
# trajectory checks over the last agent turn, and as turn checks on every
# agent turn, alternating, $(BENCH_TURNS_PAIRS) pairs: medians of wall and
# CPU time and their ratio (target: CPU at most 1.5 x). Run it idle.
BENCH_TURNS_CHATS ?= 200000
BENCH_TURNS_PAIRS ?= 3
bench-turns: build
	$(GO) build -trimpath -o bin/bench-turnsgen ./bench/cmd/turnsgen
	bench/turns.sh $(BIN) bin/bench-turnsgen $(BENCH_DATA)/turns $(BENCH_TURNS_CHATS) $(BENCH_TURNS_PAIRS)

# `make bench-flags` (part of `make bench`) grades $(BENCH_ROLLOUTS)
# generated rollouts with the CRM verifiers and --health off, and with the
# CRM verifiers each raising the reward-hacking library's flags
# (examples/flags) and --health on, alternating, $(BENCH_FLAGS_PAIRS)
# pairs: medians of wall and CPU time and their ratio (target: CPU at most
# 1.15 x). Run it idle.
BENCH_FLAGS_PAIRS ?= 3
bench-flags: build
	$(GO) build -trimpath -o bin/bench-flagsgavel ./bench/cmd/flagsgavel
	bench/flags.sh bin/bench-flagsgavel $(BENCH_DATA)/flags $(BENCH_ROLLOUTS) $(BENCH_FLAGS_PAIRS)

# `make bench-math` (part of `make bench`) compares the math check with
# Math-Verify (installed in $(PY_VENV)) in one run: correctness on
# testdata/math/corpus.jsonl, and speed on one core on $(BENCH_MATH_PAIRS)
# generated pairs, Math-Verify checking every $(BENCH_MATH_EVERY)th; then
# the slowest single comparison of the corpus, the fuzz corpus (and what
# `make fuzz` left in the build cache) and the inputs built to reach the
# limits (bench/README.md). Run it idle.
BENCH_MATH_PAIRS ?= 200000
BENCH_MATH_EVERY ?= 100
bench-math: build $(PY_VENV)/.installed
	$(GO) build -trimpath -o bin/bench-mathpairs ./bench/cmd/mathpairs
	$(PY_VENV)/bin/python bench/python/mathbench.py --gavel $(BIN) --pairs-bin bin/bench-mathpairs \
	  --data $(BENCH_DATA)/math --n $(BENCH_MATH_PAIRS) --every $(BENCH_MATH_EVERY)
	MATH_FUZZ_CACHE=$$($(GO) env GOCACHE)/fuzz/github.com/gavelhq/gavel/verifiers/mathanswer/FuzzCompare \
	  $(GO) test -run '^$$' -bench BenchmarkSlowest -benchtime 1x ./verifiers/mathanswer/ | grep -E 'max-ms|slowest'

# `make bench-python-fn` (part of `make bench`) times gavel.grade with
# Python functions as verifiers (the package from python/src, the binary of
# `make build`) on small rows: a function of about 1 ms of CPU against a
# plain loop calling it (target 1.6 x on 2 CPUs), and a function that costs
# nothing (target 20,000 rollouts/s), and prints both against their
# targets (bench/README.md). Run it idle.
bench-python-fn: build $(PY_VENV)/.installed
	GAVEL_BINARY=$(abspath $(BIN)) PYTHONPATH=python/src $(PY_VENV)/bin/python bench/python/functions.py

# `make bench-reuse` (part of `make bench`) times, back to back on
# $(BENCH_ROLLOUTS) generated rollouts, a full grade, grade --reuse with
# nothing changed and with one of the five CRM verifiers changed (a gavel
# built with VER-002's Version raised), and gavel rescore with the
# formulas unchanged and with all five changed, and prints each against
# the full grade and its target (bench/README.md).
bench-reuse: build
	bench/reuse.sh $(GO) $(BIN) $(BENCH_DATA)/reuse $(BENCH_ROLLOUTS)

# `make bench-module` (part of `make bench`) builds a gavel from a module
# outside the tree (gavel verifier init --gavel ., its main passing the CRM
# verifiers to cli.Main) and grades $(BENCH_ROLLOUTS) generated rollouts
# with it and with bin/gavel, alternating, $(BENCH_MODULE_PAIRS) pairs:
# medians of wall and CPU time and their ratio (target: wall within 5 %).
BENCH_MODULE_PAIRS ?= 5
bench-module: build
	bench/module.sh $(GO) $(BIN) $(BENCH_DATA)/module $(BENCH_ROLLOUTS) $(BENCH_MODULE_PAIRS)

# `make bench-compare` times gavel diff and gavel leaderboard on two runs of
# the same generated rollouts, graded from the same file (aligned) and from
# the file split in four and listed in reverse (not aligned): wall time, CPU
# time and peak RSS per case (bench/README.md). Datasets and runs are kept
# under $(BENCH_DATA)/compare and reused.
# BENCH_COMPARE_SIZES="1000000 10000000" adds the 10M case (about 7 GB of disk).
BENCH_COMPARE_SIZES ?= 1000000
bench-compare: build
	$(GO) build -trimpath -o bin/bench-splitparquet ./bench/cmd/splitparquet
	$(GO) build -trimpath -o bin/bench-rewardsgen ./bench/cmd/rewardsgen
	bench/compare.sh $(BIN) bin/bench-splitparquet bin/bench-rewardsgen $(BENCH_DATA)/compare $(BENCH_COMPARE_SIZES)

# `make loadtest` starts `gavel serve` on 127.0.0.1, drives it with bounded
# load (each phase ends after LOADTEST_DURATION or its request cap), stops it
# with SIGTERM and prints the table of bench/README.md.
LOADTEST_ROLLOUTS ?= 100000
LOADTEST_DURATION ?= 8s
loadtest: build
	$(GO) build -trimpath -o bin/bench-loadtest ./bench/cmd/loadtest
	bin/bench-loadtest -bin $(BIN) -data $(BENCH_DATA) -rollouts $(LOADTEST_ROLLOUTS) -duration $(LOADTEST_DURATION)

# `make image` builds the image of Containerfile with buildah (Debian's
# package; --storage-driver vfs works without privileges or overlay
# support), tagged $(IMAGE), and writes it as an OCI layout to
# $(IMAGE_OCI), which TestImage (deploy) checks: GAVEL_IMAGE_OCI=bin/image.oci.
# The deploy/ manifests name $(IMAGE_REPO); push with
# buildah --storage-driver vfs push $(IMAGE) docker://$(IMAGE).
IMAGE_REPO ?= ghcr.io/gavelhq/gavel
IMAGE      ?= $(IMAGE_REPO):latest
IMAGE_OCI  ?= bin/image.oci
image: build
	rm -rf bin/image $(IMAGE_OCI) && mkdir -p bin/image/tmp
	cp $(BIN) bin/image/gavel
	cp /etc/ssl/certs/ca-certificates.crt bin/image/ca-certificates.crt
	buildah --storage-driver vfs bud --quiet -f Containerfile -t $(IMAGE) bin/image
	buildah --storage-driver vfs push --quiet $(IMAGE) oci:$(IMAGE_OCI)

# `make docs` rewrites the pages of docs/reference generated from the code
# (the command-line reference, from every command's help; the outputs
# reference, from the result tables' columns and the JSON files' types; the
# spec reference, from the fields the spec loader accepts and the CEL
# environments; the inputs reference, from the rollout fields and what
# gavel grade does with --map, --set and --keep; the HTTP reference, from
# the routes gavel serve registers); make test fails when they drift.
docs:
	GAVEL_UPDATE_DOCS=1 $(GO) test -count=1 -run 'TestReference(CLI|Inputs)$$' ./cli
	GAVEL_UPDATE_DOCS=1 $(GO) test -count=1 -run 'TestReferenceOutputs$$' ./results
	GAVEL_UPDATE_DOCS=1 $(GO) test -count=1 -run 'TestReferenceSpec$$' ./verifiers/spec
	GAVEL_UPDATE_DOCS=1 $(GO) test -count=1 -run 'TestReferenceHTTP$$' ./serve
	GAVEL_UPDATE_DOCS=1 $(GO) test -count=1 -run 'TestReferencePairs$$' ./pairwise

# `make dist` builds what a release ships into $(DIST): the static gavel
# binary for linux/amd64 and linux/arm64 (gavel-VERSION-linux-ARCH,
# cross-built, no cgo), a wheel of the Python package around each, and
# SHA256SUMS of them all. VERSION is what bin/gavel --version says of this
# tree; the wheels take it through GAVEL_VERSION (an arm64 binary does not
# run here to say it). TestDist (cli) checks the result: GAVEL_DIST_DIR=dist.
DIST        ?= dist
DIST_ARCHES ?= amd64 arm64
dist: build $(PY_VENV)/.installed
	rm -rf $(DIST) && mkdir -p $(DIST)
	v=$$($(BIN) --version | head -n 1 | cut -d' ' -f2); \
	for a in $(DIST_ARCHES); do \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$a $(GO) build -trimpath -buildvcs=auto -ldflags='-s -w' -o $(DIST)/gavel-$$v-linux-$$a ./cmd/gavel || exit 1; \
	  rm -rf python/build python/src/gavel/bin; \
	  install -D -m 0755 $(DIST)/gavel-$$v-linux-$$a python/src/gavel/bin/gavel; \
	  (cd python && GAVEL_VERSION=$$v ../$(PY_VENV)/bin/python -m pip wheel -q --no-deps --no-build-isolation -w ../$(DIST) .) || exit 1; \
	done
	rm -rf python/build python/src/gavel/bin
	cd $(DIST) && sha256sum gavel-* >SHA256SUMS
	@ls $(DIST)

clean:
	rm -rf bin $(DEMO) gavel-out python/dist python/build python/src/gavel/bin $(DIST)
