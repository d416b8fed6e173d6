// SPDX-License-Identifier: GPL-2.0
/* SIGBUS from a truncated mapped file, inside a guarded region: a page of zeros, counted. See sigbus.h. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "base/sigbus.h"

static long page_size;
/* Per thread: a signal is delivered to the thread that faulted. */
static __thread volatile sig_atomic_t depth;
static __thread volatile unsigned long faults;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	void *page = (void *)((uintptr_t)si->si_addr & ~(uintptr_t)(page_size - 1));

	(void)uc;
	/* BUS_ADRERR: an access beyond the end of a mapped file (what truncation makes). */
	if (depth > 0 && si->si_code == BUS_ADRERR &&
	    mmap(page, page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == page) {
		faults++;
		return;  /* the read is done again, on zeros */
	}
	/* Not ours: the default action, on the same fault once this returns. */
	signal(sig, SIG_DFL);
}

int sigbus_guard_init(void)
{
	struct sigaction sa;

	if (page_size)
		return 0;
	page_size = sysconf(_SC_PAGESIZE);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGBUS, &sa, NULL) ? -errno : 0;
}

unsigned long sigbus_guard_begin(void)
{
	depth++;
	return faults;
}

bool sigbus_guard_end(unsigned long mark)
{
	depth--;
	return faults != mark;
}
