# gitnfs — see README.md. `make run` serves this repository; `make test` runs every test.
GO        ?= go
BIN       ?= bin/gitnfs
REPO      ?= .
REV       ?= HEAD
LISTEN    ?= 127.0.0.1:0
STATICCHECK_VERSION ?= v0.8.2
# The version gitnfs version prints: git describe of this checkout; empty
# outside a git checkout, where the binary falls back to Go's build info.
VERSION   ?= $(shell git describe --always --dirty 2>/dev/null)

.PHONY: build run test race lint tools e2e bench gobench clean

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/gitnfs

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
	# macOS users build it too (go install): a Linux-only call broke that once.
	GOOS=darwin $(GO) build ./...

e2e: build
	bash e2e/run.sh
	bash e2e/symlinks.sh
	bash e2e/promisor.sh
	bash e2e/merge-view.sh
	bash e2e/restart.sh
	bash e2e/follow.sh
	bash e2e/overlay.sh
	bash e2e/cthon.sh
	bash e2e/mounts.sh
	bash e2e/revisions.sh
	bash e2e/git.sh
	bash e2e/merge-git.sh

# Writes BENCHMARKS.md (rows 2-6 on this machine; row 1 is make e2e's census).
# BENCH_FLAGS=-against REV measures REV's gitnfs row by row in the same run.
bench:
	$(GO) run ./bench -out BENCHMARKS.md $(BENCH_FLAGS)

gobench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf bin

.PHONY: help
# One line per target; TestMakeHelpListsEveryTarget keeps it complete.
help:
	@echo "make build    build bin/gitnfs, its version stamped from git describe"
	@echo "make run      build, then serve this repository's HEAD and print the mount commands"
	@echo "make test     run every test"
	@echo "make race     run every test under the race detector"
	@echo "make lint     gofmt, go vet, staticcheck and the macOS build"
	@echo "make tools    install staticcheck $(STATICCHECK_VERSION) if missing"
	@echo "make e2e      the end-to-end suites through the Linux kernel client under qemu"
	@echo "make bench    regenerate BENCHMARKS.md"
	@echo "make gobench  run the Go benchmarks"
	@echo "make clean    remove bin/"
	@echo "make help     this list"
