# fnprof: per-function profiler built on eBPF.
#
#   make            build ./fnprof
#   make deps       install the Debian packages that are missing (needs root)
#   make demo       build and run the demo: fnprof tracing tests/targets/demo
#   make test       unit tests + integration tests; ends with "N passed, N failed"
#   make bench      benchmarks (not part of make test; make bench-deps installs the peers)
#   make vmlinux    regenerate vmlinux/$(ARCH)/vmlinux.h from the running kernel
#   make install    install fnprof, its man page and bash completion (PREFIX=/usr/local, DESTDIR=)
#   V=1             show the commands

OUTPUT ?= .output
ARCH := x86
CC ?= gcc
CLANG ?= clang
BPFTOOL ?= $(shell command -v bpftool 2>/dev/null || echo /usr/sbin/bpftool)
PYTHON ?= python3
# The version is written once, in user/base/version.h.
VERSION := $(shell sed -n 's/^\#define FNPROF_VERSION "\(.*\)"/\1/p' user/base/version.h)
PREFIX ?= /usr/local
DESTDIR ?=
INSTALL ?= install

WARNINGS := -Wall -Wextra -Werror -Wshadow -Wmissing-prototypes -Wstrict-prototypes \
	-Wpointer-arith -Wformat=2 -Wundef -Wno-unused-parameter
CFLAGS ?= -g -O2
ALL_CFLAGS := $(CFLAGS) $(WARNINGS) -D_GNU_SOURCE -I$(OUTPUT) -Ibpf -Iuser
LDLIBS := -lbpf -ldw -lelf -lz -lm

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_HDRS := $(wildcard bpf/*.h) vmlinux/$(ARCH)/vmlinux.h
SKELS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.bpf.o,$(BPF_SRCS))
# user/ holds main.c and opts.c on top of folders by layer (docs/architecture.md).
# One architecture's file: user/target/arch_$(ARCH).c (with bpf/arch.bpf.h and vmlinux/$(ARCH)/).
USER_SRCS := $(filter-out user/target/arch_%.c,$(wildcard user/*.c user/*/*.c)) user/target/arch_$(ARCH).c
USER_OBJS := $(patsubst user/%.c,$(OUTPUT)/%.o,$(USER_SRCS))
LIB_OBJS := $(filter-out $(OUTPUT)/main.o,$(USER_OBJS))
DEPS := $(USER_OBJS:.o=.d)

# $(1) as one word for the shell, whatever it holds (DESTDIR with a space, a ';', a quote).
shq = '$(subst ','\'',$(1))'

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" $(call shq,$(2));
endif

DEBIAN_PKGS := clang llvm make gcc g++ libbpf-dev bpftool libelf-dev zlib1g-dev pkg-config libcapstone-dev libdw-dev libdebuginfod-dev
# What the tests use besides: the harness, strip, setpriv, go tool pprof to read pprof files,
# a debuginfod server (with curl to see it up, ip to bring up lo in its network namespace),
# a C++ compiler for the C++ target, libFuzzer, a Prometheus server that scrapes --listen, and a
# browser that renders the --svg pictures, and mandoc to lint the man page.
TEST_PKGS := python3 binutils util-linux golang-go libclang-rt-14-dev debuginfod curl iproute2 prometheus chromium \
	mandoc
# make vmtest: QEMU and its BIOS, the guest's busybox and jq, cpio for its initramfs, the archive keys.
TEST_PKGS += qemu-system-x86 seabios busybox-static jq cpio debian-archive-keyring
# Node for the JIT test (tests/test_jit.py), unless one is installed already (Debian 12's is v18).
TEST_PKGS += $(if $(shell command -v node 2>/dev/null),,nodejs)
# The peers that make bench compares fnprof with.
BENCH_PKGS := bpftrace libbpf-tools

.PHONY: all clean distclean deps test-deps bench-deps demo test bench vmlinux install uninstall version
.DELETE_ON_ERROR:
.SECONDARY: $(BPF_OBJS)

all: fnprof

$(OUTPUT):
	$(Q)mkdir -p $@

# The profiles' objects claim a per-CPU buffer with a 32-bit atomic add
# (bpf/prof.bpf.h), instruction set v3 (ALU32, kernel 5.1). Not a fetch-and-add
# (BPF_FETCH, 5.12): the heap profile loads on 5.10.
PROF_BPF := $(OUTPUT)/heap.bpf.o $(OUTPUT)/mutex.bpf.o $(OUTPUT)/offcpu.bpf.o
$(PROF_BPF): BPF_CPU := -mcpu=v3

BPF_CC = $(CLANG) -g -O2 -Wall -target bpf $(BPF_CPU) -D__TARGET_ARCH_$(ARCH) -Ivmlinux/$(ARCH) -Ibpf

$(OUTPUT)/%.bpf.o: bpf/%.bpf.c $(BPF_HDRS) | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(BPF_CC) -c $< -o $@.tmp
	$(Q)$(BPFTOOL) gen object $@ $@.tmp && rm -f $@.tmp

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@

# The trace object for kernels without bpf_loop, attach cookies, task storage or fetching atomics
# (5.10-5.16; bpf/compat.bpf.h). Its skeleton takes the full one's name, and must have its maps,
# programs and globals in its order, which is checked: user space opens either through one struct
# trace_bpf, the compat build's ELF bytes from user/trace/trace_compat.c.
skel_layout = sed '/^static inline const void \*trace_bpf__elf_bytes(size_t \*sz)$$/,/^}/d' $(1)
$(OUTPUT)/trace_compat.bpf.o: bpf/trace.bpf.c $(BPF_HDRS) | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(BPF_CC) -DFNPROF_COMPAT -c $< -o $@.tmp
	$(Q)$(BPFTOOL) gen object $@ $@.tmp && rm -f $@.tmp

$(OUTPUT)/trace_compat.skel.h: $(OUTPUT)/trace_compat.bpf.o $(OUTPUT)/trace.skel.h
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name trace_bpf > $@.tmp
	$(Q)$(call skel_layout,$(OUTPUT)/trace.skel.h) > $@.full
	$(Q)$(call skel_layout,$@.tmp) | cmp -s - $@.full || \
		{ echo "$@: the compat trace object's maps, programs or globals differ from trace.bpf.o's"; exit 1; }
	$(Q)rm -f $@.full && mv $@.tmp $@

SKELS += $(OUTPUT)/trace_compat.skel.h

# Objects may include any skeleton; real header dependencies come from -MMD.
$(USER_OBJS): $(SKELS)

$(OUTPUT)/%.o: user/%.c | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

fnprof: $(USER_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@

-include $(DEPS)

# --- install ----------------------------------------------------------------

BINDIR = $(call shq,$(DESTDIR)$(PREFIX)/bin)
MANDIR = $(call shq,$(DESTDIR)$(PREFIX)/share/man/man8)
COMPDIR = $(call shq,$(DESTDIR)$(PREFIX)/share/bash-completion/completions)

install: fnprof
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)$(INSTALL) -d $(BINDIR) $(MANDIR) $(COMPDIR)
	$(Q)$(INSTALL) -m 0755 fnprof $(BINDIR)/fnprof
	$(Q)$(INSTALL) -m 0644 docs/fnprof.8 $(MANDIR)/fnprof.8
	$(Q)$(INSTALL) -m 0644 bash-completion/fnprof $(COMPDIR)/fnprof

uninstall:
	$(Q)rm -f $(BINDIR)/fnprof $(MANDIR)/fnprof.8 $(COMPDIR)/fnprof

version:
	@echo $(VERSION)

# --- set-up -----------------------------------------------------------------

# Installs the Debian packages in $(1) that are missing (apt-get update first).
define apt_install
	@missing=""; for p in $(1); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	else echo "all needed packages are installed"; fi
endef

deps:
	$(call apt_install,$(DEBIAN_PKGS))

test-deps:
	$(call apt_install,$(DEBIAN_PKGS) $(TEST_PKGS))

bench-deps:
	$(call apt_install,$(DEBIAN_PKGS) $(TEST_PKGS) $(BENCH_PKGS))

vmlinux:
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux/$(ARCH)/vmlinux.h

# --- demo, tests, benchmarks ------------------------------------------------

include tests/tests.mk

clean:
	$(Q)rm -rf $(OUTPUT) $(OUTPUT)-asan $(OUTPUT)-test fnprof fnprof-asan fnprof-test tests/bin

# clean, and the kernels that make vmtest downloaded (.cache/vm).
distclean: clean
	$(Q)rm -rf .cache
