# Tests, the demo and the benchmarks. Included from the top Makefile.

TEST_BIN := tests/bin
TARGET_CFLAGS := -g -O2 -fno-omit-frame-pointer -Wall -Wextra -Werror
TARGET_SRCS := $(wildcard tests/targets/*.c)
TARGET_LIB_SRCS := $(wildcard tests/targets/lib*.c)
TARGET_PROG_SRCS := $(filter-out $(TARGET_LIB_SRCS),$(TARGET_SRCS))
TARGET_LIBS := $(patsubst tests/targets/%.c,$(TEST_BIN)/%.so,$(TARGET_LIB_SRCS))
TARGET_PROGS := $(patsubst tests/targets/%.c,$(TEST_BIN)/%,$(TARGET_PROG_SRCS)) \
	$(patsubst tests/targets/%.cpp,$(TEST_BIN)/%,$(wildcard tests/targets/*.cpp))

# The same programs as production builds them: no frame pointers, -O2, with DWARF (tests split it off).
# jit_nofp: its JIT code keeps frame pointers, its C code not, as in CPython built -O2 with -X perf.
NOFP_PROGS := $(TEST_BIN)/work_nofp $(TEST_BIN)/burn_nofp $(TEST_BIN)/jit_nofp
TARGET_PROGS += $(NOFP_PROGS)
# As -fcf-protection builds (Ubuntu's and Fedora's default) make them: every function starts with endbr64.
CET_PROGS := $(TEST_BIN)/work_cet
TARGET_PROGS += $(CET_PROGS)

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(TEST_BIN)/unit/%,$(UNIT_SRCS))
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
ASAN_OBJS := $(patsubst user/%.c,$(OUTPUT)-asan/%.o,$(USER_SRCS))
ASAN_LIB_OBJS := $(filter-out $(OUTPUT)-asan/main.o,$(ASAN_OBJS))

$(TEST_BIN) $(TEST_BIN)/unit $(OUTPUT)-asan $(OUTPUT)-test:
	$(Q)mkdir -p $@

# Targets: frame pointers on (so that the entry is an emulated push %rbp), -O2.
$(TEST_BIN)/lib%.so: tests/targets/lib%.c | $(TEST_BIN)
	$(call msg,CC,$@)
	$(Q)$(CC) $(TARGET_CFLAGS) -shared -fPIC $< -o $@

$(TEST_BIN)/%: tests/targets/%.c tests/targets/spin.h $(TARGET_LIBS) | $(TEST_BIN)
	$(call msg,CC,$@)
	$(Q)$(CC) $(TARGET_CFLAGS) $< -o $@ -L$(TEST_BIN) -Wl,-rpath,'$$ORIGIN' \
		$(if $(findstring uselib,$*),-ltarget) $(if $(findstring zloop,$*),-lz -ldl) -lpthread -lm

# The fleet target's "upgrade": the same program with its function at another offset.
TARGET_PROGS += $(TEST_BIN)/fleet2
$(TEST_BIN)/fleet2: tests/targets/fleet.c | $(TEST_BIN)
	$(call msg,CC,$@)
	$(Q)$(CC) $(TARGET_CFLAGS) -DFLEET_PAD $< -o $@

$(NOFP_PROGS): $(TEST_BIN)/%_nofp: tests/targets/%.c | $(TEST_BIN)
	$(call msg,CC,$@)
	$(Q)$(CC) -g -O2 -fomit-frame-pointer -Wall -Wextra -Werror $< -o $@ -lpthread -lm

# --slow's target: no frame pointers, so that its stacks need DWARF (a rule of its own beats the pattern's).
$(TEST_BIN)/slowcall: tests/targets/slowcall.c | $(TEST_BIN)
	$(call msg,CC,$@)
	$(Q)$(CC) -g -O2 -fomit-frame-pointer -Wall -Wextra -Werror $< -o $@

# The profiles' DWARF stacks' target: waits in glibc from code without frame pointers.
$(TEST_BIN)/waits: tests/targets/waits.c | $(TEST_BIN)
	$(call msg,CC,$@)
	$(Q)$(CC) -g -O2 -fomit-frame-pointer -Wall -Wextra -Werror $< -o $@ -lpthread

# The JIT target, static: it runs chroot'ed (a container's own /tmp) with nothing else in its root.
TARGET_PROGS += $(TEST_BIN)/jit_static
$(TEST_BIN)/jit_static: tests/targets/jit.c | $(TEST_BIN)
	$(call msg,CC,$@)
	$(Q)$(CC) $(TARGET_CFLAGS) -static $< -o $@

$(CET_PROGS): $(TEST_BIN)/%_cet: tests/targets/%.c | $(TEST_BIN)
	$(call msg,CC,$@)
	$(Q)$(CC) $(TARGET_CFLAGS) -fcf-protection=full $< -o $@ -lpthread -lm

$(TEST_BIN)/%: tests/targets/%.cpp | $(TEST_BIN)
	$(call msg,CXX,$@)
	$(Q)$(CXX) $(TARGET_CFLAGS) $< -o $@

# The Go target, where Go is installed (the test that uses it skips without it).
GO := $(shell command -v go 2>/dev/null)
ifneq ($(GO),)
TARGET_PROGS += $(TEST_BIN)/gotarget
$(TEST_BIN)/gotarget: tests/targets/go/main.go | $(TEST_BIN)
	$(call msg,GO,$@)
	$(Q)HOME=$(abspath $(TEST_BIN)) GOCACHE=$(abspath $(TEST_BIN))/.gocache GO111MODULE=off $(GO) build -o $@ $<
# Go slow calls (--slow): handle() parks its goroutine 5 ms on every 100th call.
TARGET_PROGS += $(TEST_BIN)/goslow
$(TEST_BIN)/goslow: tests/targets/goslow/main.go | $(TEST_BIN)
	$(call msg,GO,$@)
	$(Q)HOME=$(abspath $(TEST_BIN)) GOCACHE=$(abspath $(TEST_BIN))/.gocache GO111MODULE=off $(GO) build -o $@ $<
# The same, stripped (-s -w: no .symtab, no DWARF): names only from .gopclntab.
TARGET_PROGS += $(TEST_BIN)/gotarget-stripped
$(TEST_BIN)/gotarget-stripped: tests/targets/go/main.go | $(TEST_BIN)
	$(call msg,GO,$@)
	$(Q)HOME=$(abspath $(TEST_BIN)) GOCACHE=$(abspath $(TEST_BIN))/.gocache GO111MODULE=off $(GO) build \
		-ldflags='-s -w' -o $@ $<
# A cgo program: C functions inside a Go binary.
TARGET_PROGS += $(TEST_BIN)/gotarget-cgo
$(TEST_BIN)/gotarget-cgo: tests/targets/gocgo/main.go | $(TEST_BIN)
	$(call msg,GO,$@)
	$(Q)HOME=$(abspath $(TEST_BIN)) GOCACHE=$(abspath $(TEST_BIN))/.gocache GO111MODULE=off CGO_ENABLED=1 \
		$(GO) build -o $@ $<
# A Go program calling a shared library through cgo: system-wide sessions must leave it unharmed.
TARGET_PROGS += $(TEST_BIN)/gotarget-lib
$(TEST_BIN)/gotarget-lib: tests/targets/golib/main.go $(TARGET_LIBS) | $(TEST_BIN)
	$(call msg,GO,$@)
	$(Q)HOME=$(abspath $(TEST_BIN)) GOCACHE=$(abspath $(TEST_BIN))/.gocache GO111MODULE=off CGO_ENABLED=1 \
		CGO_LDFLAGS="-L$(abspath $(TEST_BIN)) -Wl,-rpath,$(abspath $(TEST_BIN))" $(GO) build -o $@ $<
endif

# ASan/UBSan build of the user-space objects, for unit tests and one integration pass.
$(ASAN_OBJS): $(SKELS)
$(OUTPUT)-asan/%.o: user/%.c | $(OUTPUT)-asan
	$(call msg,CC-ASAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -MMD -MP -c $< -o $@

-include $(ASAN_OBJS:.o=.d)

fnprof-asan: $(ASAN_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(SAN_FLAGS) $^ $(LDLIBS) -o $@

# fnprof-test: fnprof with the hooks that only tests use (FNPROF_TEST_HOOKS, e.g. FNPROF_TEST_HIDE_SWITCH_IN),
# which the production build leaves out. The same objects, but those that load the trace object, built
# against a variant of it with the hooks (its skeleton under $(OUTPUT)-test, found first).
HOOK_SRCS := user/trace/tracer.c user/trace/trace_load.c user/trace/trace_compat.c user/base/rbreader.c \
	user/base/runcache.c user/target/tpbtf.c
HOOK_OBJS := $(patsubst user/%.c,$(OUTPUT)-test/%.o,$(HOOK_SRCS))
TEST_HOOK_OBJS := $(filter-out $(patsubst user/%.c,$(OUTPUT)/%.o,$(HOOK_SRCS)),$(USER_OBJS)) $(HOOK_OBJS)

$(OUTPUT)-test/trace.bpf.o: bpf/trace.bpf.c $(BPF_HDRS) | $(OUTPUT)-test
	$(call msg,BPF,$@)
	$(Q)$(BPF_CC) -DFNPROF_TEST_HOOKS -c $< -o $@.tmp
	$(Q)$(BPFTOOL) gen object $@ $@.tmp && rm -f $@.tmp

$(OUTPUT)-test/trace.skel.h: $(OUTPUT)-test/trace.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name trace_bpf > $@

$(OUTPUT)-test/trace_compat.bpf.o: bpf/trace.bpf.c $(BPF_HDRS) | $(OUTPUT)-test
	$(call msg,BPF,$@)
	$(Q)$(BPF_CC) -DFNPROF_TEST_HOOKS -DFNPROF_COMPAT -c $< -o $@.tmp
	$(Q)$(BPFTOOL) gen object $@ $@.tmp && rm -f $@.tmp

$(OUTPUT)-test/trace_compat.skel.h: $(OUTPUT)-test/trace_compat.bpf.o $(OUTPUT)-test/trace.skel.h
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name trace_bpf > $@.tmp
	$(Q)$(call skel_layout,$(OUTPUT)-test/trace.skel.h) > $@.full
	$(Q)$(call skel_layout,$@.tmp) | cmp -s - $@.full || \
		{ echo "$@: the compat trace object's maps, programs or globals differ from trace.bpf.o's"; exit 1; }
	$(Q)rm -f $@.full && mv $@.tmp $@

$(HOOK_OBJS): $(OUTPUT)-test/%.o: user/%.c $(OUTPUT)-test/trace.skel.h $(OUTPUT)-test/trace_compat.skel.h $(SKELS)
	$(call msg,CC-TEST,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -DFNPROF_TEST_HOOKS -I$(OUTPUT)-test $(ALL_CFLAGS) -MMD -MP -c $< -o $@

-include $(HOOK_OBJS:.o=.d)

fnprof-test: $(TEST_HOOK_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@

# A process exiting between two pages of its maps: the test wraps getline to kill it there.
$(TEST_BIN)/unit/test_procmaps: UNIT_LDFLAGS := -Wl,--wrap=getline -Wl,--wrap=__getdelim

# The figures of a call, the BPF side's arithmetic in plain C.
$(TEST_BIN)/unit/test_figures: bpf/figures.h bpf/trace.bpf.h bpf/fnprof.h

$(TEST_BIN)/unit/%: tests/unit/%.c tests/unit/unit.h $(ASAN_LIB_OBJS) | $(TEST_BIN)/unit
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -Itests/unit $< $(ASAN_LIB_OBJS) $(LDLIBS) $(UNIT_LDFLAGS) -o $@

# libFuzzer target for the ELF reader: `make fuzz` runs it for FUZZ_SECONDS; the test suite runs it briefly.
FUZZ_SECONDS ?= 300
FUZZ_SRCS := $(addprefix user/elf/,symbols.c gobin.c demangle.c debuginfo.c ehframe.c elfcheck.c inlines.c) \
	$(addprefix user/base/,array.c log.c safeopen.c sanitize.c proc.c)
$(TEST_BIN)/fuzz_symbols: tests/fuzz/fuzz_symbols.c $(FUZZ_SRCS) user/elf/symbols.h user/elf/gobin.h user/elf/inlines.h | $(TEST_BIN)
	$(call msg,FUZZ,$@)
	$(Q)$(CLANG) -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -Iuser -Ibpf $< $(FUZZ_SRCS) \
		-lbpf -ldw -lelf -lz -lstdc++ -o $@

# The code reader (disassembly, jump tables) on arbitrary bytes; seeds: the targets' .text, cut in pieces.
$(TEST_BIN)/fuzz_arch: tests/fuzz/fuzz_arch.c user/target/arch_x86.c user/base/log.c user/target/arch.h | $(TEST_BIN)
	$(call msg,FUZZ,$@)
	$(Q)$(CLANG) -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -Iuser -Ibpf $< user/target/arch_x86.c \
		user/base/log.c -lbpf -ldl -o $@

# The DWARF unwinder on arbitrary stack copies, and the perf map reader on arbitrary text.
FUZZ_UNWIND_SRCS := user/stacks/unwind.c user/stacks/framestep.c user/target/procmaps.c user/target/mapsnap.c \
	$(addprefix user/base/,fileidx.c safeopen.c sigbus.c array.c log.c proc.c sanitize.c rbreader.c)
$(TEST_BIN)/fuzz_unwind: tests/fuzz/fuzz_unwind.c $(FUZZ_UNWIND_SRCS) user/stacks/unwind.h bpf/fnprof.h | $(TEST_BIN)
	$(call msg,FUZZ,$@)
	$(Q)$(CLANG) -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -Iuser -Ibpf $< $(FUZZ_UNWIND_SRCS) \
		-lbpf -ldw -lelf -lz -o $@

FUZZ_PERFMAP_SRCS := user/stacks/perfmap.c \
	$(addprefix user/base/,budget.c json.c array.c log.c proc.c safeopen.c sanitize.c)
$(TEST_BIN)/fuzz_perfmap: tests/fuzz/fuzz_perfmap.c $(FUZZ_PERFMAP_SRCS) user/stacks/perfmap.h | $(TEST_BIN)
	$(call msg,FUZZ,$@)
	$(Q)$(CLANG) -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -Iuser -Ibpf $< $(FUZZ_PERFMAP_SRCS) \
		-lbpf -o $@

FUZZERS := $(addprefix $(TEST_BIN)/,fuzz_symbols fuzz_arch fuzz_unwind fuzz_perfmap)

fuzz: export LSAN_OPTIONS = suppressions=$(CURDIR)/tests/fuzz/lsan.supp
fuzz: $(FUZZERS) $(TARGET_PROGS) $(TARGET_LIBS)
	mkdir -p $(TEST_BIN)/fuzz-corpus && cp $(TARGET_PROGS) $(TARGET_LIBS) $(TEST_BIN)/fuzz-corpus/
	$(TEST_BIN)/fuzz_symbols -max_total_time=$(FUZZ_SECONDS) -max_len=65536 $(TEST_BIN)/fuzz-corpus
	mkdir -p $(TEST_BIN)/fuzz-code && $(PYTHON) tests/fuzz/code_seeds.py $(TEST_BIN)/fuzz-code $(TARGET_PROGS)
	$(TEST_BIN)/fuzz_arch -max_total_time=$(FUZZ_SECONDS) -max_len=4096 $(TEST_BIN)/fuzz-code
	mkdir -p $(TEST_BIN)/fuzz-stack $(TEST_BIN)/fuzz-perfmap
	$(TEST_BIN)/fuzz_unwind -max_total_time=$(FUZZ_SECONDS) -max_len=16384 $(TEST_BIN)/fuzz-stack
	$(TEST_BIN)/fuzz_perfmap -max_total_time=$(FUZZ_SECONDS) -max_len=4096 $(TEST_BIN)/fuzz-perfmap

# Debian's own nginx, whose code once crashed fnprof (issue 37): unpacked into the test cache, never
# installed, so that no daemon starts on port 80. make test-deps fetches it (apt-get download);
# without it (no network) its tests say they were skipped.
DEBIAN_NGINX := $(TEST_BIN)/debian/nginx/usr/sbin/nginx
$(DEBIAN_NGINX): | $(TEST_BIN)
	$(call msg,APT,$@)
	$(Q)d=$(TEST_BIN)/debian; rm -rf $$d && mkdir -p $$d && \
	(cd $$d && (apt-get download -q nginx || (apt-get update -q && apt-get download -q nginx))); \
	if ls $$d/nginx_*.deb >/dev/null 2>&1; then dpkg-deb -x $$d/nginx_*.deb $$d/nginx && rm -f $$d/nginx_*.deb; \
	else echo "warning: cannot download Debian's nginx: its tests will be skipped"; fi
test-deps: $(DEBIAN_NGINX)

test-build: fnprof fnprof-asan fnprof-test $(TARGET_PROGS) $(TARGET_LIBS) $(UNIT_BINS) $(FUZZERS)

# Unit and integration tests run from one harness, which prints "N passed, N failed".
# The build is a second make: GO is looked up when a Makefile is read, and in
# `make test-deps test` only a make started after test-deps sees the go it installed.
test:
	$(Q)$(MAKE) --no-print-directory test-build
	$(Q)$(PYTHON) tests/run.py $(TESTS)

# The programs that the examples in README.md and docs/ run: after `make demo` they all run as written
# (tests/test_tool.py checks it).
DOC_PROGS := $(TEST_BIN)/demo $(TEST_BIN)/slowcall $(TEST_BIN)/work $(TEST_BIN)/burn
# docs/slow.md's Go example (test-deps installs Go).
DOC_PROGS += $(if $(GO),$(TEST_BIN)/goslow)
demo: fnprof $(DOC_PROGS)
	./fnprof -f parse_record -f 'wait_*' --sample --svg demo.svg -- $(TEST_BIN)/demo 3

# Benchmarks (bench/Makefile builds the targets and the floor into bench/.output).
bench: fnprof
	$(Q)bench/run.sh

.PHONY: test-build fuzz

# The kernel matrix (issue 34, tests/vm/README.md): Debian's 5.10, 6.1 and 6.12 kernels booted in
# QEMU, every mode checked there; a table of the results. The kernels are downloaded once into
# .cache/vm (deb.debian.org, a private apt state; make clean keeps them, make distclean does not):
# test-deps does not fetch them.
# VMTEST_KERNELS=6.1 picks kernels; make vmtest-diag saves their verbose logs and calibration instead.
VM_SITEKINDS := $(TEST_BIN)/vm/sitekinds
$(VM_SITEKINDS): tests/vm/sitekinds.c | $(TEST_BIN)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@) && $(CC) $(TARGET_CFLAGS) $< -o $@

vmtest vmtest-diag: fnprof $(VM_SITEKINDS) $(TARGET_PROGS) $(TARGET_LIBS)
	$(Q)$(PYTHON) tests/vm/vmtest.py $(if $(filter vmtest-diag,$@),--diag) $(VMTEST_KERNELS)

.PHONY: vmtest vmtest-diag
