# gavel: `make demo` builds gavel, generates a sample dataset and grades it;
# `make test` runs the whole test suite (what CI runs).

GO      ?= go
BIN     := bin/gavel
DEMO    := demo
ROLLOUTS ?= 20000

.PHONY: build demo test vet fmt-check fuzz bench clean

build:
	$(GO) build -trimpath -o $(BIN) ./cmd/gavel

demo: build
	mkdir -p $(DEMO)
	$(BIN) gen --out $(DEMO)/rollouts.parquet --rollouts $(ROLLOUTS) --seed 1 --bad-share 0.01
	$(BIN) grade --out $(DEMO)/results $(DEMO)/rollouts.parquet; status=$$?; \
	  if [ $$status -ne 0 ] && [ $$status -ne 3 ]; then exit $$status; fi
	@echo "results in $(DEMO)/results (exit status 3 above means: some rows have status error, as the demo data asks)"

test: fmt-check vet
	$(GO) test -race -timeout 12m ./...
	$(MAKE) fuzz

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "not gofmt-formatted:"; echo "$$out"; exit 1; fi

# Each fuzz target runs briefly; its corpus lives under testdata/fuzz.
FUZZTIME ?= 10s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./columnar/jsonview/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeLine$$' -fuzztime $(FUZZTIME) ./columnar/
	$(GO) test -run '^$$' -fuzz '^FuzzNumbersIn$$' -fuzztime $(FUZZTIME) ./verifiers/

clean:
	rm -rf bin $(DEMO) gavel-out
