# gitnfs — see README.md. `make run` serves this repository; `make test` runs every test.
GO        ?= go
BIN       ?= bin/gitnfs
REPO      ?= .
REV       ?= HEAD
LISTEN    ?= 127.0.0.1:0
STATICCHECK_VERSION ?= v0.8.2

.PHONY: build run test race lint tools e2e bench gobench clean

build:
	$(GO) build -o $(BIN) ./cmd/gitnfs

run: build
	$(BIN) serve --repo $(REPO) --rev $(REV) --listen $(LISTEN)

test:
	$(GO) test -count=1 ./...

race:
	$(GO) test -race -count=1 ./...

tools:
	@command -v staticcheck >/dev/null 2>&1 || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

lint: tools
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	PATH="$$PATH:$$($(GO) env GOPATH)/bin" staticcheck ./...

e2e: build
	bash e2e/run.sh
	bash e2e/merge-view.sh
	bash e2e/restart.sh
	bash e2e/follow.sh
	bash e2e/overlay.sh

# Writes BENCHMARKS.md (rows 2-6 on this machine; row 1 is make e2e's census).
# BENCH_FLAGS=-against REV measures REV's gitnfs row by row in the same run.
bench:
	$(GO) run ./bench -out BENCHMARKS.md $(BENCH_FLAGS)

gobench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf bin
