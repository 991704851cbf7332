# Ferry build targets. `make test` is the test command the README and CI use.

GO        ?= go
FUZZTIME  ?= 30s
BENCHTIME ?= 1s
GOLANGCI_LINT_VERSION ?= v2.15.0
GOBIN     ?= $(shell $(GO) env GOPATH)/bin
GOLANGCI  := $(GOBIN)/golangci-lint

.PHONY: all build test lint generate-check fuzz bench tools clean deploy-build deploy-up deploy-down deploy-test cluster-test ha-stress failover-stress failover-controllers failover-partition deploy-controller-up deploy-controller-down deploy-controller-test e2e-console bench-compare k8s-manifests k8s-check k8s-smoke

all: build test

build:
	$(GO) build ./...

## test: every test with the race detector, never cached; then the tests that only mean
## something without it: allocation counts, and the interop tests of official-client
## features that have data races of their own (the orderly consumer, Request(), and the
## push consumer re-adding a queue after a failback).
test:
	$(GO) test -race -count=1 ./...
	$(GO) test -count=1 -run 'Alloc|TestOrderlyConsumption|TestRequestReply|TestOfficialRequestAnsweredByFerry|TestFailbackToRestartedMaster' ./...

## lint: go vet plus golangci-lint (installed at the pinned version when missing; again on
## interop with the build tags of the failover harnesses, and on deploy/helm with that of
## the Kubernetes smoke test), go vet
## of the examples module (its programs build against this checkout), and a check that the
## generated files (protocol/codes_string.go, stringer) are up to date.
lint: tools generate-check
	$(GO) vet ./...
	$(GOLANGCI) run --allow-parallel-runners ./...
	$(GOLANGCI) run --allow-parallel-runners --build-tags failoverstress,failoverpartition ./interop/
	$(GOLANGCI) run --allow-parallel-runners --build-tags k8ssmoke ./deploy/helm/
	cd examples && $(GO) vet ./...

## generate-check: rerun go generate (stringer at the version pinned in protocol/codes.go)
## and fail when a checked-in generated file differs.
generate-check:
	$(GO) generate ./protocol
	git diff --exit-code -- protocol/codes_string.go

tools:
	@if ! $(GOLANGCI) version 2>/dev/null | grep -q "version $(GOLANGCI_LINT_VERSION:v%=%)"; then \
		echo "installing golangci-lint $(GOLANGCI_LINT_VERSION)"; \
		GOBIN=$(GOBIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION); \
	fi

## fuzz: run every fuzz target of every package for FUZZTIME each.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
		for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "== $$pkg $$target ($(FUZZTIME))"; \
			$(GO) test $$pkg -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME); \
		done; \
	done

## bench: every benchmark, with allocation counts.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...

## bench-compare: Ferry beside NATS JetStream and Redis streams in one run, with the
## shared comparison harness (BENCH_DIR, next to the checkout; see its README), ROUNDS
## rounds, JSON lines appended to BENCH_OUT and the medians printed at the end. It installs
## nats-server (go install, into bin/) and redis-server (apt-get) when missing. Run it on
## an otherwise idle machine: about 5 minutes per round on 2 cores.
BENCH_DIR ?= ../shared/bench
ROUNDS    ?= 3
BENCH_OUT ?= $(CURDIR)/bin/compare-results.jsonl
NATS_SERVER_VERSION ?= v2.15.2
bench-compare:
	@test -x $(BENCH_DIR)/scripts/compare.sh || { echo "no comparison harness at $(BENCH_DIR) (set BENCH_DIR)"; exit 1; }
	@mkdir -p bin
	@test -x bin/nats-server || GOBIN=$(CURDIR)/bin $(GO) install github.com/nats-io/nats-server/v2@$(NATS_SERVER_VERSION)
	@command -v redis-server >/dev/null || { apt-get install -y -q redis-server && (systemctl stop redis-server 2>/dev/null || true); }
	cd $(BENCH_DIR) && NATS_SERVER=$(CURDIR)/bin/nats-server OUT=$(BENCH_OUT) scripts/compare.sh $(CURDIR) $(ROUNDS)

clean:
	rm -rf bin

## deploy-build: static ferry and ferryctl binaries for the container image (deploy/build/).
deploy-build:
	CGO_ENABLED=0 $(GO) build -o deploy/build/ferry ./cmd/ferry
	CGO_ENABLED=0 $(GO) build -o deploy/build/ferryctl ./cmd/ferryctl

## deploy-up / deploy-down: two name servers and two master–slave broker groups in
## containers (docker-compose, images built from local files only).
deploy-up: deploy-build
	cd deploy && docker-compose -p ferry up -d --build

deploy-down:
	cd deploy && docker-compose -p ferry down -v

## deploy-test: the deployment's acceptance test (deploy/test.sh); needs Docker, not part
## of `make test`.
deploy-test: deploy-build
	deploy/test.sh

## deploy-controller-up / deploy-controller-down / deploy-controller-test: the
## controller-mode deployment (deploy/docker-compose.controller.yml: two name servers,
## three controllers, two groups of three brokers with automatic failover) and its
## acceptance test (deploy/test-controller.sh): it comes up, elects, and survives killing
## a master. Needs Docker; not part of `make test`.
deploy-controller-up: deploy-build
	cd deploy && docker-compose -p ferrycm -f docker-compose.controller.yml up -d --build

deploy-controller-down:
	cd deploy && docker-compose -p ferrycm -f docker-compose.controller.yml down -v

deploy-controller-test: deploy-build
	deploy/test-controller.sh

## cluster-test: the local process deployment (deploy/cluster.sh, 2 name servers and 2
## master-slave groups on 127.0.0.1) with ferryctl and the official client, then its
## controller mode (cluster.sh --mode controller: 3 controllers, 2 groups of 3 brokers)
## through a master's SIGKILL; not part of `make test` (it uses fixed ports).
cluster-test:
	deploy/cluster-test.sh

## ha-stress: TestSyncMasterKillLosesNothing for HA_ROUNDS rounds (default 20): a
## SYNC_MASTER under load killed with SIGKILL, every acknowledged message byte-identical
## on its slave; not part of `make test` (which runs one round).
HA_ROUNDS ?= 20
ha-stress:
	FERRY_HA_STRESS=$(HA_ROUNDS) $(GO) test -count=1 -timeout 30m -run '^TestSyncMasterKillLosesNothing$$' -v ./interop/

## failover-stress: the acceptance harness of automatic failover (interop, build tag
## failoverstress, so not part of `make test`): three `ferry controller` and three
## `ferry broker` processes in controller mode (allAckInSyncStateSet), producers of
## Ferry's client and of the official Go client, the master SIGKILLed FAILOVER_KILLS
## times (default 50) and restarted as a slave; then 0 acknowledged messages lost, every
## one read back by a consumer of each kind, nothing read that was never sent. It prints
## the unavailability per kill (p50, max) for each client kind as a JSON line.
## FERRY_FAILOVER_RATE, FERRY_FAILOVER_PAUSE and FERRY_FAILOVER_DWELL tune the load and
## the kills (docs/operations.md, "Automatic failover").
FAILOVER_KILLS ?= 50
failover-stress:
	FERRY_FAILOVER_KILLS=$(FAILOVER_KILLS) $(GO) test -tags failoverstress -count=1 -timeout 120m -run '^TestFailoverStress$$' -v ./interop/

## failover-controllers: the controllers' own failures under load (build tag
## failoverstress): the Raft leader SIGKILLed (no send fails, a new leader, no election),
## then two of three controllers down (the master keeps serving, no election).
failover-controllers:
	$(GO) test -tags failoverstress -count=1 -timeout 20m -run '^TestFailoverController(LeaderKill|Minority)$$' -v ./interop/

## failover-partition: a network partition in the controller-mode deployment
## (deploy/docker-compose.controller.yml, Docker, images from local files; build tag
## failoverpartition): broker-a's master cut off from the controllers and its slaves while
## producers of both client kinds still reach it; it acknowledges nothing, another master
## is elected, and after the heal it rejoins as a slave with what it wrote alone cut off;
## a history check over the whole run. Not part of `make test`; prints a JSON line.
failover-partition: deploy-build
	$(GO) test -tags failoverpartition -count=1 -timeout 20m -run '^TestFailoverPartition$$' -v ./interop/

## e2e-console: the web console (package console) in a real headless browser: Debian's
## chromium (installed with apt-get when missing) driven by chromedp, which the build tag
## e2e keeps out of `go test ./...`. It runs the console's acceptance list and saves
## screenshots of the main pages to docs/images/ (shown in docs/console.md); not part of
## `make test`. FERRY_CHROMIUM names another browser binary.
e2e-console:
	@if [ -z "$$FERRY_CHROMIUM" ] && ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then \
		echo "installing chromium (Debian package)"; \
		SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; \
	fi
	mkdir -p docs/images
	FERRY_CONSOLE_SCREENSHOTS=$(CURDIR)/docs/images $(GO) test -tags e2e -count=1 -run '^TestConsoleInBrowser$$' -v ./console/

## k8s-manifests: `helm lint --strict` of the chart deploy/helm/ferry with both profiles
## (values.yaml: small; values-production.yaml) and the test values, a check that it
## refuses bad values (an even number of controllers, a bad group name, ...), and `helm
## template` of each: the plain manifests deploy/k8s/small/ferry.yaml and
## deploy/k8s/production/ferry.yaml, and deploy/helm/testdata/secrets.yaml. All three are
## checked in and decoded by deploy/helm/chart_test.go. Helm is built from the Go module
## proxy at HELM_VERSION (the first run downloads and compiles it, a few minutes).
HELM_VERSION ?= v3.22.0
HELM  ?= $(GO) run helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
CHART := deploy/helm/ferry
k8s-manifests:
	$(HELM) lint --strict $(CHART)
	$(HELM) lint --strict $(CHART) -f $(CHART)/values-production.yaml
	$(HELM) lint --strict $(CHART) -f deploy/helm/testdata/secrets-values.yaml
	@set -e; for bad in controller.replicas=4 controller.replicas=1 'broker.groups[0].name=Broker_A' \
		'broker.groups[0].replicas=1' tls.mode=on antiAffinity=always acl.enabled=true \
		'tls.mode=enforcing,tls.existingSecret=t,tls.requireClientCert=true,tls.clientCA=true'; do \
		if $(HELM) template ferry $(CHART) --set "$$bad" >/dev/null 2>&1; then \
			echo "the chart accepted --set $$bad"; exit 1; fi; \
	done; echo "the chart refuses bad values"
	@mkdir -p deploy/k8s/small deploy/k8s/production
	@set -e; render() { out=$$1; shift; \
		{ echo "# Generated by make k8s-manifests (helm template $$*); do not edit."; \
		  $(HELM) template "$$@"; } > $$out.tmp; mv $$out.tmp $$out; echo "rendered $$out"; }; \
	render deploy/k8s/small/ferry.yaml ferry $(CHART); \
	render deploy/k8s/production/ferry.yaml ferry $(CHART) -f $(CHART)/values-production.yaml; \
	render deploy/helm/testdata/secrets.yaml ferry $(CHART) -f deploy/helm/testdata/secrets-values.yaml

## k8s-check: k8s-manifests, then fail when a rendering differs from the checked-in one
## (run by .ci/run after the lint step).
k8s-check: k8s-manifests
	git diff --exit-code -- deploy/k8s deploy/helm/testdata
	@if [ -n "$$(git status --porcelain -- deploy/k8s deploy/helm/testdata)" ]; then \
		git status --porcelain -- deploy/k8s deploy/helm/testdata; \
		echo "renderings not checked in: run make k8s-manifests and commit them"; exit 1; fi

## k8s-smoke: the small profile's pods in Docker (deploy/helm/smoke_test.go, build tag
## k8ssmoke): every pod of deploy/k8s/small/ferry.yaml as a container run as its manifest
## says (its DNS name, config file, environment, user, read-only root, its own /data),
## all ready, a master elected; a replica and then the master recreated at new addresses
## with their data; 150 messages sent and consumed. Needs Docker (the image from local
## files); not part of `make test`.
k8s-smoke: deploy-build
	cd deploy && docker build -q -t ferry:local .
	$(GO) test -tags k8ssmoke -count=1 -timeout 15m -run '^TestSmallProfileInDocker$$' -v ./deploy/helm/
