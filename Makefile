# leasehold: run `make help` for the targets.

SHELL         := /bin/bash
GO            ?= go
GOBIN         ?= $(CURDIR)/bin
GOLANGCI_LINT := $(GOBIN)/golangci-lint
GOLANGCI_VER  := v2.15.0
TEST_TIMEOUT  ?= 9m

.DEFAULT_GOAL := help
.PHONY: help test lint fmt vet tidy ddl demo chaos bench

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# The short fault-injection round measures failovers of separate worker
# processes; it runs after the other tests, not beside them on two cores.
CHAOS_ROUND   := ^TestChaosShort$$

test: ## run every test with -race on every dialect (starts private PostgreSQL and MariaDB), then the short chaos round
	@set -o pipefail; { $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -json -skip '$(CHAOS_ROUND)' ./...; \
		$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -json -run '$(CHAOS_ROUND)' ./internal/chaos/; } \
		| $(GO) run ./internal/cmd/testreport

vet: ## go vet
	$(GO) vet ./...

lint: $(GOLANGCI_LINT) ## golangci-lint (installed into ./bin by go install)
	$(GOLANGCI_LINT) run ./...

$(GOLANGCI_LINT):
	GOBIN=$(GOBIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VER)

fmt: ## gofmt every Go file
	gofmt -w $$(git ls-files '*.go')

tidy: ## go mod tidy
	$(GO) mod tidy

ddl: ## print the schema DDL, safe to apply twice: make ddl DIALECT=postgres|mysql|sqlite|sqlserver [FROM=version]
	$(GO) run ./cmd/leasehold ddl -dialect $(or $(DIALECT),postgres) -from $(or $(FROM),0)

demo: ## run the failover demo: three copies of ./sample on SQLite, the leader killed (under 2 min; KEEP=1 keeps its database)
	GO="$(GO)" $(GO) run ./sample/demo $(if $(KEEP),-keep)

chaos: ## fault injection: worker processes on SQLite, PostgreSQL, MariaDB and a replicated PostgreSQL pair; 9 fault kinds; histories checked (CHAOS_FAULTS=300, CHAOS_SEED, CHAOS_KINDS=failover-sync,...)
	GO="$(GO)" CHAOS_FAULTS="$(or $(CHAOS_FAULTS),300)" $(GO) run ./internal/chaos/cmd/chaos

bench: ## scale benchmark: leases per process, 100 processes, shutdown, pool joins, handoff and failover, pool rebalance, per dialect vs targets (BENCH_SECTIONS, BENCH_DIALECTS; under 10 min)
	GO="$(GO)" $(GO) run ./internal/bench/cmd/bench
