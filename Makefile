# godwit: one Makefile for every binary, test and tool. See README.md.
CC      ?= cc
BUILD   ?= build
OPT     ?= -O2
SAN     ?=
PKGS    := libmicrohttpd gnutls libcjson libcurl libpq yaml-0.1 openssl
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CFLAGS  ?=
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
           -Wno-missing-field-initializers -g $(OPT) $(SAN) -Ishared $(PKG_CFLAGS) -MMD -MP
LDLIBS  := $(PKG_LIBS) -lm -lpthread
CRITERION_LIBS := $(shell pkg-config --libs criterion 2>/dev/null || echo -lcriterion)

SHARED_SRC  := $(sort $(wildcard shared/*.c shared/api/*.c shared/kube/*.c))
WEBHOOK_SRC := $(sort $(filter-out webhook/main.c,$(wildcard webhook/*.c)))
UNIT_SRC    := $(sort $(wildcard tests/unit/*.c))
INTEG_SRC   := $(sort $(wildcard tests/integration/*.c))
# Tests that need the local cluster, in three binaries: the controller's (tests/controller), the
# local cluster's own (tests/localcluster/tests: API server, job runner, client, kubectl), and
# the end-to-end ones (tests/cluster: Migrations and runner steps on real PostgreSQL). The
# harness (tests/cluster/harness.c, e2e.c) and the helpers link into each.
CLUSTER_SRC := $(sort $(wildcard tests/cluster/test_*.c))
CTRLTEST_SRC := $(sort $(wildcard tests/controller/test_*.c))
LCTEST_SRC := $(sort $(wildcard tests/localcluster/tests/test_*.c))
TESTLIB_SRC := $(sort $(filter-out $(CLUSTER_SRC) $(CTRLTEST_SRC) $(LCTEST_SRC), \
                 $(wildcard tests/cluster/*.c tests/controller/*.c tests/localcluster/tests/*.c)))
APISERVER_SRC := $(sort $(wildcard tests/localcluster/apiserver/*.c))
JOBRUNNER_SRC := $(sort $(wildcard tests/localcluster/jobrunner/*.c))
CONTROLLER_SRC := $(sort $(filter-out controller/main.c controller/runner/% controller/nodeagent/main.c controller/nodeagent/agent%,$(wildcard controller/*.c controller/*/*.c)))
# The agent serves its API on the webhook's HTTPS layer.
NODEAGENT_SRC := $(sort $(wildcard controller/nodeagent/*.c)) webhook/server.c webhook/tlsstore.c \
                 webhook/metrics.c
RUNNER_SRC := $(sort $(wildcard controller/runner/*.c))
PG_SRC := $(sort $(wildcard tests/pg/*.c))

V ?= 0
Q := $(if $(filter 1,$(V)),,@)

# What the binaries say they are (--version, the startup log line, godwit_build_info): the
# release in VERSION, the commit, and the commit's date (a rebuild of one commit says the same).
# An image build without .git passes GODWIT_COMMIT and GODWIT_BUILD_DATE (Dockerfile).
GODWIT_VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
GODWIT_COMMIT ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
GODWIT_BUILD_DATE ?= $(shell date -u -d "@$$(git log -1 --format=%ct 2>/dev/null || date +%s)" \
                       +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo unknown)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
SHARED_OBJ  := $(call obj,$(SHARED_SRC))
# Programs link the shared code as an archive, so each takes only the modules it uses (the
# webhook carries no Kubernetes client, the job runner no API kinds).
SHARED_LIB  := $(BUILD)/libgodwit.a
WEBHOOK_OBJ := $(call obj,$(WEBHOOK_SRC))

BINS := $(BUILD)/godwit-webhook $(BUILD)/godwit-certs $(BUILD)/godwit-gen $(BUILD)/godwit-admit \
        $(BUILD)/godwit-yaml2json $(BUILD)/godwit-apiserver $(BUILD)/godwit-jobrunner \
        $(BUILD)/godwit-controller $(BUILD)/godwit-runner $(BUILD)/godwit-nodeagent \
        $(BUILD)/godwit-injector

.PHONY: all deps test test-unit test-integration test-rules test-demo test-asan test-clang lint bench \
        bench-webhook bench-migration bench-controller bench-ptah bench-ptah-plan bench-podmotion fuzz demo demo-ptah demo-podmotion \
        demo-webhook certs manifests check-generated clean fuzz-targets
all: $(BINS)

# Tests may include webhook headers; shared/ never does (STYLE.md).
$(BUILD)/obj/tests/%.o: CFLAGS += -Iwebhook -Icontroller -Itests/localcluster/apiserver -Itests/pg \
  -Itests/cluster -Itests/controller -Itests/localcluster/tests
$(BUILD)/obj/manifests/%.o: CFLAGS += -Imanifests/gen
$(BUILD)/obj/controller/nodeagent/%.o: CFLAGS += -Iwebhook


# Rewritten only when a value changes, so a new commit rebuilds version.o and relinks, no more.
$(BUILD)/gen/version_gen.h: FORCE
	@mkdir -p $(dir $@)
	@printf '#define GODWIT_VERSION "%s"\n#define GODWIT_COMMIT "%s"\n#define GODWIT_BUILD_DATE "%s"\n' \
	  '$(GODWIT_VERSION)' '$(GODWIT_COMMIT)' '$(GODWIT_BUILD_DATE)' >$@.tmp
	@cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@
$(BUILD)/obj/shared/version.o: $(BUILD)/gen/version_gen.h
$(BUILD)/obj/shared/version.o: CFLAGS += -I$(BUILD)/gen
.PHONY: FORCE
FORCE:

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC  $<")
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(SHARED_LIB): $(SHARED_OBJ)
	$(if $(Q),@echo "  AR  $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/godwit-webhook: $(call obj,webhook/main.c) $(WEBHOOK_OBJ) $(SHARED_LIB)
	$(if $(Q),@echo "  LD  $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/godwit-certs: $(call obj,$(wildcard certs/*.c)) $(SHARED_LIB)
	$(if $(Q),@echo "  LD  $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/godwit-gen: $(call obj,$(wildcard manifests/gen/*.c)) $(SHARED_LIB)
	$(if $(Q),@echo "  LD  $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/godwit-admit: $(call obj,tests/tools/admit.c) $(SHARED_LIB)
	$(if $(Q),@echo "  LD  $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/godwit-yaml2json: $(call obj,tests/tools/yaml2json.c) $(SHARED_LIB)
	$(if $(Q),@echo "  LD  $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/godwit-injector: $(call obj,tests/tools/injector.c) $(SHARED_LIB)
	$(if $(Q),@echo "  LD  $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/godwit-apiserver: $(call obj,$(APISERVER_SRC)) $(SHARED_LIB)
	$(if $(Q),@echo "  LD  $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
# The local kubelet restores checkpoints and shields sandboxes with the node agent's own code.
$(BUILD)/godwit-jobrunner: $(call obj,$(JOBRUNNER_SRC) controller/nodeagent/criu.c \
                             controller/nodeagent/netns.c) $(SHARED_LIB)
	$(if $(Q),@echo "  LD  $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/godwit-controller: $(call obj,controller/main.c $(CONTROLLER_SRC)) $(SHARED_LIB)
	$(if $(Q),@echo "  LD  $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/godwit-runner: $(call obj,$(RUNNER_SRC)) $(SHARED_LIB)
	$(if $(Q),@echo "  LD  $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/godwit-nodeagent: $(call obj,$(NODEAGENT_SRC)) $(SHARED_LIB)
	$(if $(Q),@echo "  LD  $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/unit: $(call obj,$(UNIT_SRC)) $(WEBHOOK_OBJ) $(SHARED_OBJ)
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  LD  $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS) $(CRITERION_LIBS)
# The API server's CRD schema, admission and conversion layers, also linked into the cluster
# tests that call them directly (tests/localcluster/tests/test_apiserver_*.c).
LAYERS_SRC := $(sort $(wildcard $(addprefix tests/localcluster/apiserver/,schema*.c admission*.c \
                conversion.c webhook_call.c status.c)))
TESTLIB_OBJ := $(call obj,$(TESTLIB_SRC) $(CONTROLLER_SRC) $(PG_SRC) $(LAYERS_SRC)) $(SHARED_OBJ)
$(BUILD)/tests/cluster: $(call obj,$(CLUSTER_SRC)) $(TESTLIB_OBJ)
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  LD  $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS) $(CRITERION_LIBS)
# The TCP counter server that tests/cluster/test_criu_tcp.c checkpoints and restores (never
# with a sanitizer: CRIU would have to carry its shadow memory).
$(BUILD)/tests/criu-counter: tests/criu/counter.c
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC  $@")
	$(Q)$(CC) $(filter-out $(SAN),$(CFLAGS)) -o $@ $<
$(BUILD)/tests/cluster $(BUILD)/tests/localcluster: | $(BUILD)/tests/criu-counter
$(BUILD)/tests/controller: $(call obj,$(CTRLTEST_SRC)) $(TESTLIB_OBJ)
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  LD  $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS) $(CRITERION_LIBS)
$(BUILD)/tests/localcluster: $(call obj,$(LCTEST_SRC)) $(TESTLIB_OBJ)
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  LD  $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS) $(CRITERION_LIBS)
CLUSTER_TESTS := $(BUILD)/tests/controller $(BUILD)/tests/localcluster $(BUILD)/tests/cluster
$(BUILD)/tests/integration: $(call obj,$(INTEG_SRC)) $(SHARED_OBJ)
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  LD  $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS) $(CRITERION_LIBS)

# Debian 12 packages; `make deps` installs the missing ones and brings the installed ones to
# the current version (security updates: PostgreSQL 15.20 behaves unlike 15.18, and the tests
# prove both; tests/pg/pg-without-plugin-setting.sh brings the older), as root or through sudo.
DEB_PKGS := pkg-config libmicrohttpd-dev libgnutls28-dev libssl-dev libcjson-dev \
            libcurl4-openssl-dev libpq-dev libcriterion-dev libyaml-dev clang sqlite3 libsqlite3-0 \
            libclang-rt-14-dev cppcheck wrk openssl curl ca-certificates postgresql-15 postgresql-15-wal2json pgcopydb \
            time patchelf iproute2 nftables
deps:
	@if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	$$SUDO apt-get update -qq || echo "make deps: apt-get update failed; going on with the package lists at hand"; \
	todo=$$(apt-get -s install $(DEB_PKGS) 2>/dev/null | awk '/^Inst /{print $$2}' | tr '\n' ' '); \
	if [ -n "$$todo" ]; then \
	  echo "make deps: installing or upgrading $$todo"; \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $(DEB_PKGS) >/dev/null || exit 1; \
	fi
	@command -v kubectl >/dev/null 2>&1 || tests/install-kubectl.sh
	@if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; $$SUDO tests/criu/install.sh
	@if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; $$SUDO tests/pgcopydb/install.sh

# Builds run on every CPU; the suites decide their own parallelism.
NPROC := $(shell nproc 2>/dev/null || echo 2)
test: deps
	$(MAKE) -j$(NPROC) all $(BUILD)/tests/unit $(BUILD)/tests/integration $(CLUSTER_TESTS)
	$(MAKE) test-unit test-integration test-cluster test-rules test-demo check-generated lint \
	  test-clang

test-unit: $(BUILD)/tests/unit
	$(BUILD)/tests/unit --jobs 2

test-integration: all $(BUILD)/tests/integration
	GODWIT_BUILD=$(BUILD) $(BUILD)/tests/integration --jobs 1

# The local cluster: API server, client, job runner, controller manager, real kubectl.
CLUSTER_JOBS ?= 2
test-cluster: all $(CLUSTER_TESTS)
	GODWIT_BUILD=$(BUILD) $(BUILD)/tests/controller --jobs $(CLUSTER_JOBS)
	GODWIT_BUILD=$(BUILD) $(BUILD)/tests/localcluster --jobs $(CLUSTER_JOBS)
	GODWIT_BUILD=$(BUILD) $(BUILD)/tests/cluster --jobs $(CLUSTER_JOBS)

# The whole suite again under AddressSanitizer and UndefinedBehaviorSanitizer. The cluster suite
# runs one test at a time there: Criterion 2.4.1's parent process leaks a 48-byte block of its own
# when suites run in parallel workers (nothing of ours on that stack), which LeakSanitizer would
# report. Sanitizer reports of the cluster's processes and Pods fail the test (harness.c).
test-asan: deps
	$(MAKE) BUILD=build-asan OPT=-O1 \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
	  all build-asan/tests/unit build-asan/tests/integration build-asan/tests/controller \
	  build-asan/tests/localcluster build-asan/tests/cluster
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  $(MAKE) BUILD=build-asan SAN="-fsanitize=address,undefined -fno-sanitize-recover=all" \
	  CLUSTER_JOBS=1 test-unit test-integration test-cluster

# The README's main job must keep working: the demo runs and checks itself (same rows on both
# sides, the refused apply); its output goes to $(BUILD)/demo.log, shown when it fails. The Ptah
# demo likewise (Ready, the uncertain run settled by alice's acknowledgment, each version once),
# into $(BUILD)/ptah-demo.log.
test-demo: all $(BUILD)/tests/criu-counter
	@tests/demo/migration-demo.sh $(BUILD) >$(BUILD)/demo.log 2>&1 || \
	  { tail -n 60 $(BUILD)/demo.log; echo "make test-demo: the demo failed (whole log: $(BUILD)/demo.log)"; exit 1; }
	@echo "the demo ran (its output: $(BUILD)/demo.log)"
	@tests/demo/demo-fails-fast.sh $(BUILD)
	@tests/demo/ptah-demo.sh $(BUILD) >$(BUILD)/ptah-demo.log 2>&1 || \
	  { tail -n 60 $(BUILD)/ptah-demo.log; echo "make test-demo: the Ptah demo failed (whole log: $(BUILD)/ptah-demo.log)"; exit 1; }
	@echo "the Ptah demo ran (its output: $(BUILD)/ptah-demo.log)"
	@tests/demo/podmotion-demo.sh $(BUILD) >$(BUILD)/podmotion-demo.log 2>&1 || \
	  { tail -n 60 $(BUILD)/podmotion-demo.log; echo "make test-demo: the PodMotion demo failed (whole log: $(BUILD)/podmotion-demo.log)"; exit 1; }
	@echo "the PodMotion demo ran (its output: $(BUILD)/podmotion-demo.log)"

# The alerts of manifests/monitoring/prometheusrule.yaml, with promtool, and the kustomize
# component they ship in, with kubectl kustomize (tests/monitoring); an install into another
# namespace rendered the same way (tests/install).
test-rules: $(BUILD)/godwit-yaml2json
	tests/monitoring/rules-test.sh $(BUILD)
	tests/monitoring/component-test.sh $(BUILD)
	tests/install/namespace-test.sh

# Every source must also build warning-free with clang, the tests' included.
test-clang:
	$(MAKE) -j$(NPROC) BUILD=build-clang CC=clang all build-clang/tests/unit \
	  build-clang/tests/integration build-clang/tests/controller build-clang/tests/localcluster \
	  build-clang/tests/cluster

lint:
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability --inline-suppr \
	  --suppress=missingIncludeSystem --std=c11 -Ishared \
	  -I/usr/include/cjson \
	  -i tests/localcluster/tests \
	  shared webhook certs manifests/gen tests/tools controller tests/localcluster bench

manifests: $(BUILD)/godwit-gen
	$(BUILD)/godwit-gen crds manifests/crds
	$(BUILD)/godwit-gen docs docs/api/reference

check-generated: $(BUILD)/godwit-gen
	tests/check-generated.sh $(BUILD)/godwit-gen

certs: $(BUILD)/godwit-certs
	$(BUILD)/godwit-certs --out $(BUILD)/certs --dns godwit-webhook.godwit-system.svc \
	  --dns localhost --ip 127.0.0.1

# The benchmark (bench/webhook): the baseline (the webhook's HTTP layer answering constant
# bodies) and the handlers alone, in process.
$(BUILD)/obj/bench/%.o: CFLAGS += -Iwebhook
$(BUILD)/godwit-bench-baseline: $(call obj,bench/webhook/baseline.c) $(WEBHOOK_OBJ) $(SHARED_OBJ)
	$(if $(Q),@echo "  LD  $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/godwit-bench-handler: $(call obj,bench/webhook/handler.c) $(WEBHOOK_OBJ) $(SHARED_OBJ)
	$(if $(Q),@echo "  LD  $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# The migration benchmark (bench/migration): the cost of one probe sample, side by side with a
# connect + SELECT 1.
$(BUILD)/godwit-bench-probe: $(call obj,bench/migration/probe.c) $(SHARED_LIB)
	$(if $(Q),@echo "  LD  $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# make bench: every benchmark, one after the other (bench-webhook about 3 minutes,
# bench-migration about 4 at its default size (its live cutover run about 2 of them),
# bench-controller about 2, bench-ptah about 1,
# bench-ptah-plan about 1; docs/operations/benchmarks.md).
bench: deps
	$(MAKE) all $(BUILD)/godwit-bench-baseline $(BUILD)/godwit-bench-handler \
	  $(BUILD)/godwit-bench-probe
	bench/webhook/run.sh $(BUILD)
	bench/migration/run.sh $(BUILD)
	bench/controller/run.sh $(BUILD)
	bench/ptah/run.sh $(BUILD)
	bench/ptah-plan/run.sh $(BUILD)

# The controller at scale: 500 dry-run Migrations at once, then 5,000 cached objects.
bench-controller: deps
	$(MAKE) all
	bench/controller/run.sh $(BUILD)

bench-webhook: deps
	$(MAKE) all $(BUILD)/godwit-bench-baseline $(BUILD)/godwit-bench-handler
	bench/webhook/run.sh $(BUILD)

bench-migration: deps
	$(MAKE) all $(BUILD)/godwit-bench-probe
	bench/migration/run.sh $(BUILD)
	bench/migration/live.sh $(BUILD)

# 200 versions by a PtahMigration and by godwit-runner alone, against psql -1 -f per file.
bench-ptah: deps
	$(MAKE) all
	bench/ptah/run.sh $(BUILD)

# A PtahSchema plan of a 300-table schema with one changed column, against pg_dump --schema-only.
bench-ptah-plan: deps
	$(MAKE) $(BUILD)/godwit-runner
	bench/ptah-plan/run.sh $(BUILD)

# PodMotion: 20 PodMigrations of the CRIU counter between the local cluster's worker nodes,
# against bare criu dump + restore between network namespaces (as root; about 40 s).
bench-podmotion: deps
	$(MAKE) all $(BUILD)/tests/criu-counter
	bench/podmotion/run.sh $(BUILD)

# libFuzzer targets (tests/fuzz/fuzz_*.c). Built by tests/fuzz/run.sh with clang into build-fuzz,
# every object instrumented (SAN=-fsanitize=fuzzer-no-link,...); the arena is replaced by
# tests/fuzz/arena_asan.c (one malloc per block) so AddressSanitizer sees each cJSON node.
FUZZ_SRC    := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS   := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRC))
FUZZ_SHARED := $(filter-out $(call obj,shared/arena.c),$(SHARED_OBJ)) $(call obj,tests/fuzz/arena_asan.c)
$(BUILD)/fuzz/%: $(BUILD)/obj/tests/fuzz/%.o $(WEBHOOK_OBJ) $(FUZZ_SHARED)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)
$(BUILD)/obj/tests/fuzz/%.o: CFLAGS += -Itests/unit
$(BUILD)/godwit-fuzz-seeds: $(call obj,tests/fuzz/seeds.c tests/unit/gen.c) $(FUZZ_SHARED)
	$(if $(Q),@echo "  LD  $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
fuzz-targets: $(FUZZ_BINS) $(BUILD)/godwit-fuzz-seeds

fuzz: deps
	tests/fuzz/run.sh

# The main job: a live Migration on the local cluster with two PostgreSQL servers.
demo: deps
	$(MAKE) all
	tests/demo/migration-demo.sh $(BUILD)

# A PtahMigration from apply to Ready, then a run killed mid-version settled by an approver's
# acknowledgment (kubectl --context alice), then a PtahSchema's approval flow (bob writes, alice
# approves, a stale approval is refused), on the local cluster with one PostgreSQL server.
demo-ptah: deps
	$(MAKE) all
	tests/demo/ptah-demo.sh $(BUILD)

# A counter that keeps counting on one TCP connection while its pod moves from node to node
# (CRIU, the node agents, the controller) on the local cluster's worker nodes.
demo-podmotion: deps
	$(MAKE) all $(BUILD)/tests/criu-counter
	tests/demo/podmotion-demo.sh $(BUILD)

# The webhook alone: every sample defaulted, admitted or refused over HTTPS.
demo-webhook: deps
	$(MAKE) all
	tests/demo/webhook-demo.sh $(BUILD)

clean:
	rm -rf build build-asan build-clang build-fuzz

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
