# leasehold: run `make help` for the targets.

SHELL         := /bin/bash
GO            ?= go
GOBIN         ?= $(CURDIR)/bin
GOLANGCI_LINT := $(GOBIN)/golangci-lint
GOLANGCI_VER  := v2.15.0
TEST_TIMEOUT  ?= 12m

.DEFAULT_GOAL := help
.PHONY: help modules check test lint fmt vet tidy cli ddl demo chaos bench

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# The modules of the repository: the library at the root, the tests that
# need a real database (tests/, as gorm keeps its own), the leasehold
# command (cmd/leasehold), the packages that open and start databases for
# the command and the tests (internal/dbopen, internal/testdb), the sample
# service (sample/, with the demo) and the test and benchmark tooling
# (tools/: chaos, bench, the test summary). Each has its own go.mod, with
# a replace of the modules of this repository it uses, so the root's
# lists only what the library and its own tests import: no database driver,
# no test database, no exporter (docs/design.md, "Modules").
MODULES       := . tests cmd/leasehold internal/dbopen internal/testdb sample tools

# gotestsum runs make test and prints it; its version is the one tools/go.mod
# pins (a tool dependency), built into ./bin.
GOTESTSUM     := $(GOBIN)/gotestsum
TEST_REPORT   := $(CURDIR)/test-report.json
# TEST_PARALLEL is how many tests of one package run at once (go test
# -parallel); most tests wait on leases and timers, not on the CPU, but
# more than five starves the database servers on two cores.
TEST_PARALLEL ?= 5
# TEST_PACKAGES is how many test binaries run at once (go test -p); more
# than two starves the pure-Go SQLite targets on two cores.
TEST_PACKAGES ?= 2
# -race turns on the compiler's checkptr instrumentation everywhere; in the
# pure-Go SQLite (modernc.org, C translated to Go, all unsafe pointer
# arithmetic) it costs about a third of that target's CPU and checks no
# code of ours, so it is off there. The race detector itself stays on.
BUILD_FLAGS   := -race -gcflags=modernc.org/...=-d=checkptr=0
TEST_FLAGS    := $(BUILD_FLAGS) -count=1 -timeout $(TEST_TIMEOUT) -p $(TEST_PACKAGES) -parallel $(TEST_PARALLEL) -json

# TEST_BUILD compiles what make test runs before any test starts: every
# module's test binaries with the flags of the run (their results, with no
# test selected, are cached, so on a warm build cache this takes seconds),
# and the sample's binary, which a test of the CLI builds. On a fresh
# machine it downloads the modules and compiles everything, for several
# minutes: beside the library's tests, that compiling starved the ones
# that wait on leases of the CPU they need to renew in time. Its errors are
# not printed here: a package that does not compile fails in the run that
# follows, which says so.
TEST_BUILD    := for m in $(MODULES); do (cd $$m && $(GO) test $(BUILD_FLAGS) -run '^$$' ./... >/dev/null 2>&1); done; \
	(cd sample && $(GO) build ./... >/dev/null 2>&1); true

# The short fault-injection round measures failovers of separate worker
# processes; it runs after the other tests, not beside them on two cores.
# The clock overlay's test builds the same worker (with an overlaid
# runtime, a rebuild of the standard library): in the same round the
# build is done once, and not beside the rest of the suite.
CHAOS_ROUND   := ^(TestChaosShort|TestClockOverlay)$$
# The library's contention test runs thirteen worker processes against one
# lease with a TTL of 1.2 s per database; beside the rest of the suite, or
# beside its other databases, on two cores they starve each other, so it
# runs after the others, alone, one database at a time. The scale test
# (10,000 leases in one process, per database) is bound by the CPU too and
# runs alone before it.
ALONE_ROUND   := ^TestContentionProcesses$$
SCALE_ROUND   := ^TestScale$$

# CHAOS_WARM builds the chaos round's worker (the overlaid runtime and
# everything above it, a minute or more of CPU on two cores) while the
# library's tests run, which mostly wait on leases: at the lowest priority,
# so that it takes only the CPU they leave idle, and out of the report.
# The chaos round then finds it in the build cache, which keys an overlaid
# file by its content, not by the temporary directory it is written to.
CHAOS_WARM    := (cd tools && nice -n 19 $(GO) test -count=1 -run "^TestClockOverlay$$" ./chaos/ >/dev/null 2>&1)

# TEST_JSON is the go test -json stream of make test. The tests that need
# a database (tests/), the longest, run beside those of the other modules,
# whose stream waits in a file and follows theirs, and beside the warm-up
# of the chaos round's build; then the scale test, the contention test and
# the chaos round run, each alone. A module that fails does not stop the
# others.
TEST_JSON     := status=0; side=$$(mktemp -d); \
	(for m in $(filter-out tests,$(MODULES)); do (cd $$m && $(GO) test $(TEST_FLAGS) -skip "$(CHAOS_ROUND)" ./...) || touch $$side/failed; done; $(CHAOS_WARM)) >$$side/json 2>$$side/stderr & \
	(cd tests && $(GO) test $(TEST_FLAGS) -skip "$(ALONE_ROUND)|$(SCALE_ROUND)" ./...) || status=1; \
	wait; cat $$side/json; cat $$side/stderr >&2; [ ! -e $$side/failed ] || status=1; rm -rf $$side; \
	(cd tests && $(GO) test $(TEST_FLAGS) -run "$(SCALE_ROUND)" ./coordination/) || status=1; \
	(cd tests && $(GO) test $(TEST_FLAGS) -parallel 1 -run "$(ALONE_ROUND)" ./coordination/) || status=1; \
	(cd tools && $(GO) test $(TEST_FLAGS) -run "$(CHAOS_ROUND)" ./chaos/) || status=1; \
	exit $$status

check: ## the library's own tests, no database server (under a minute): the inner loop
	GOWORK=off $(GO) test -count=1 ./...

test: $(GOTESTSUM) ## run every test with -race on every dialect (starts private PostgreSQL and MariaDB), then the short chaos round
	@echo "make test: compiling the tests of every module first"; $(TEST_BUILD)
	@status=0; \
	$(GOTESTSUM) --format pkgname --hide-summary skipped --jsonfile $(TEST_REPORT) --raw-command -- bash -c '$(TEST_JSON)' || status=1; \
	(cd tools && $(GO) run ./testsummary $(TEST_REPORT)) || status=1; \
	exit $$status

$(GOTESTSUM): tools/go.mod
	cd tools && $(GO) build -o $(abspath $(GOTESTSUM)) gotest.tools/gotestsum

vet: ## go vet, every module
	@set -e; for m in $(MODULES); do echo "go vet: $$m"; (cd $$m && $(GO) vet ./...); done

lint: $(GOLANGCI_LINT) ## golangci-lint, every module (installed into ./bin by go install)
	@set -e; for m in $(MODULES); do echo "golangci-lint: $$m"; \
		(cd $$m && $(abspath $(GOLANGCI_LINT)) run --config $(CURDIR)/.golangci.yml ./...); done

$(GOLANGCI_LINT):
	GOBIN=$(abspath $(GOBIN)) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VER)

fmt: ## gofmt every Go file
	gofmt -w $$(git ls-files '*.go')

tidy: ## go mod tidy, every module
	@set -e; for m in $(MODULES); do echo "go mod tidy: $$m"; (cd $$m && $(GO) mod tidy); done

modules: ## list the Go modules of the repository (for .ci/run)
	@echo $(MODULES)

cli: ## build the leasehold command into ./bin/leasehold
	cd cmd/leasehold && $(GO) build -o $(abspath $(GOBIN))/leasehold .

ddl: ## print the schema DDL, safe to apply twice: make ddl DIALECT=postgres|mysql|sqlite|sqlserver [FROM=version]
	$(GO) run -C cmd/leasehold . ddl -dialect $(or $(DIALECT),postgres) -from $(or $(FROM),0)

demo: ## run the failover demo: three copies of ./sample on SQLite, the leader killed (under 2 min; KEEP=1 keeps its database)
	cd sample && GO="$(GO)" $(GO) run ./demo $(if $(KEEP),-keep)

chaos: ## fault injection: worker processes on SQLite, PostgreSQL, MariaDB, PgBouncer, replicated PostgreSQL and MariaDB pairs and a Galera cluster; 11 fault kinds; histories checked (CHAOS_FAULTS=300, CHAOS_SEED, CHAOS_DIALECTS=galera,..., CHAOS_KINDS=failover-sync,...)
	cd tools && GO="$(GO)" CHAOS_FAULTS="$(or $(CHAOS_FAULTS),300)" $(GO) run ./chaos/cmd/chaos

bench: ## scale benchmark: leases per process, 100 processes, shutdown, pool joins, handoff and failover, pool rebalance, scheduled slot lateness, sticky partitions, per dialect vs targets (BENCH_SECTIONS, BENCH_DIALECTS; under 10 min)
	cd tools && GO="$(GO)" $(GO) run ./bench/cmd/bench
