// SPDX-License-Identifier: GPL-2.0
/*
 * libdwfl unwinding of copied stacks, as perf's unwind-libdw.c does it: the
 * process is "attached" with callbacks that hand libdwfl the sample's
 * registers and read memory from the stack copy only. Objects are reported
 * to libdwfl through /proc/PID/map_files (the very file mapped, inside the
 * target's root); the vDSO from the process's memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <sys/sysmacros.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include "base/array.h"
#include <linux/types.h>

#include "base/fileidx.h"
#include "fnprof.h"
#include "base/log.h"
#include "target/mapsnap.h"
#include "target/procmaps.h"
#include "base/safeopen.h"
#include "base/sigbus.h"
#include "stacks/framestep.h"
#include "stacks/unwind.h"

/*
 * A file given to libdwfl: one fd and one Elf for all its mappings, each
 * module holding a reference to the Elf (libelf counts them), so that a
 * process mapping one library 30000 times costs one fd, not 30000.
 */
struct uw_file {
	Elf *elf;                 /* NULL: not readable (its mappings are left out) */
	int fd;
	GElf_Half e_type;
	__u64 vaddr, vend;        /* its first PT_LOAD's start (aligned down) and its last's end */
};

/* Whether libdwfl has CFI for an address (a return address less one): asked once per address. */
struct cfi_slot {
	__u64 pc;
	bool cfi;
};

/* A frame address without CFI, and what its code up to the ret does (framestep_decode). */
struct code_slot {
	__u64 ip;
	struct fs_epilogue e;
};

struct exec_range {
	__u64 start, end;
};

#define CFI_SLOTS 2048            /* a direct-mapped cache of the addresses walks meet */
#define CODE_SLOTS 512
#define CODE_READ 32              /* bytes of code read at a frame without CFI: an epilogue is shorter */

struct unwinder {
	pid_t pid;
	Dwfl *dwfl;
	bool attached;
	int arch_fd;              /* fnprof's own executable: the architecture for dwfl_attach_state */
	Elf *arch_elf;
	struct uw_file **files;   /* of the modules given to libdwfl, one per file (fileidx: by inode) */
	size_t nr_files, cap_files;
	struct fileidx by_inode;
	size_t nr_modules, max_modules;
	__u64 high_reported;      /* the end of the last module given (in address order, apart) */
	struct maps_pace pace;    /* when the mappings may be read again */
	struct maps_pace *gate;   /* -a: the one all unwinders' costly reads share, or NULL */
	__u64 digest;             /* of the mappings given to libdwfl */
	/* The sample being unwound. */
	const struct dwarf_sample *s;
	const unsigned char *stack;
	__u64 *ips;
	int n, max;
	bool ran_off;             /* a read above the copy's end */
	unsigned int nr_logged;
	unsigned int nr_truncated; /* walks dropped: a mapped object shrank under libdwfl */
	long nr_fds, max_fds;     /* fds held by its files; its share of the cap on all unwinders' (fds_held) */
	unsigned long nr_over;    /* mappings left out for its shares */
	struct exec_range *exec;  /* the executable mappings (JIT code too), as last read: return addresses' check */
	size_t nr_exec, cap_exec;
	struct cfi_slot *cfi;     /* CFI_SLOTS, emptied when the objects are given again */
	struct code_slot *code;   /* CODE_SLOTS, made at the first frame without CFI */
	/* The walk's frames without CFI: stepped here (framestep.h), then libdwfl restarts from the caller. */
	bool restarted;           /* this libdwfl walk starts at a caller found here: its first frame is recorded */
	bool need_step;           /* on_frame stopped libdwfl at a frame without CFI: at */
	unsigned int seg_frames;  /* frames of this libdwfl walk so far */
	struct fs_regs at, next;  /* the frame stopped at; the caller found, where libdwfl restarts */
	struct unwind_counts cnt; /* of the walk */
	struct mapsnap *snap;     /* -a: the mappings read when the process was first sampled, or NULL */
	bool gone;                /* its mappings came from snap: its files are opened by path */
};

/*
 * libdwfl keeps each file's fd open. A process with thousands of objects
 * mapped would take the whole descriptor table, and then the HTTP server
 * could accept nothing: all unwinders together hold at most half the soft
 * RLIMIT_NOFILE; objects beyond are not reported (their frames end walks).
 * Under -a, one process takes an eighth of that at most, and of the
 * modules (memory): one process's mappings cannot starve the others.
 */
static atomic_long fds_held;

#define UNWIND_MAX_MODULES 4096   /* a process's modules: libdwfl reports each in time linear in their number */
#define UNWIND_SHARES 8           /* -a: a process's share of the fds and modules */
#define REREAD_MIN_S 0.05         /* the mappings re-read 20 times a second at most (maps_pace) */

/* The fds all unwinders may hold: half the soft limit (fnprof raised it to the hard one). */
static long fds_cap(void)
{
	struct rlimit nofile;

	return getrlimit(RLIMIT_NOFILE, &nofile) || nofile.rlim_cur == RLIM_INFINITY ? 512 : nofile.rlim_cur / 2;
}

/* libdwfl asks for a module's ELF when a walk first needs it: a new reference to its file's. */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base, char **file_name,
		    Elf **elfp)
{
	struct uw_file *f = *userdata;

	if (f && f->elf)
		*elfp = elf_begin(-1, ELF_C_READ_MMAP, f->elf);
	return -1;  /* no fd of its own: the file's stays with the unwinder */
}

/* .eh_frame of the object itself is what unwinding needs; debug files are the symbolizer's business. */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			char **debuginfo_file_name)
{
	return -1;
}

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = find_elf,
	.find_debuginfo = no_debuginfo,
};

/* The vDSO's image, copied out of the process into a memfd. -errno or an fd. */
static int vdso_fd(pid_t pid, const struct mapping *m)
{
	size_t len = m->end - m->start;
	char path[64], *buf = malloc(len);
	int mem, fd = -1;

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	mem = open(path, O_RDONLY | O_CLOEXEC);
	if (buf && mem >= 0 && pread(mem, buf, len, m->start) == (ssize_t)len) {
		fd = memfd_create("vdso", MFD_CLOEXEC);
		if (fd >= 0 && write(fd, buf, len) != (ssize_t)len) {
			close(fd);
			fd = -1;
		}
	}
	if (mem >= 0)
		close(mem);
	free(buf);
	return fd;
}

/* The span of f's PT_LOAD segments, as libdwfl's own reporting takes it. false: no ELF to unwind with. */
static bool read_span(struct uw_file *f)
{
	GElf_Ehdr eh;
	GElf_Phdr ph;
	size_t i, n;
	bool first = true;

	if (!gelf_getehdr(f->elf, &eh) || elf_getphdrnum(f->elf, &n))
		return false;
	f->e_type = eh.e_type;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(f->elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (first)
			f->vaddr = ph.p_vaddr & -(ph.p_align ? ph.p_align : 1);
		first = false;
		f->vend = ph.p_vaddr + ph.p_memsz;
	}
	return !first && (f->e_type == ET_DYN || f->e_type == ET_EXEC);
}

/*
 * A process gone, its mappings read before (mapsnap.h): the file at the
 * path as fnprof sees it, if it is the very file that was mapped (device
 * and inode). An fd or -errno.
 */
static int open_same_file(const struct mapping *m)
{
	int fd = m->path[0] == '/' ? open_regular(AT_FDCWD, m->path, 0) : -ENOENT;
	struct stat sb;

	if (fd >= 0 && (fstat(fd, &sb) || sb.st_ino != m->inode ||
			sb.st_dev != makedev(m->dev_major, m->dev_minor))) {
		close(fd);
		fd = -ESTALE;
	}
	return fd;
}

/* Opens the file mapped at m (the very file: through map_files) as an ELF, held with its fd. */
static void open_file(struct unwinder *u, struct uw_file *f, const struct mapping *m, bool vdso)
{
	char path[96];

	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", u->pid, (unsigned long long)m->start,
		 (unsigned long long)m->end);
	f->fd = vdso ? vdso_fd(u->pid, m) : u->gone ? open_same_file(m) : open_regular(AT_FDCWD, path, 0);
	f->elf = f->fd >= 0 ? elf_begin(f->fd, ELF_C_READ_MMAP, NULL) : NULL;
	if (f->elf && read_span(f)) {
		u->nr_fds++;
		atomic_fetch_add(&fds_held, 1);
		return;
	}
	log_debug("unwinding: cannot read %s: %s", m->path, f->fd < 0 ? strerror(-f->fd) : elf_errmsg(-1));
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
	f->elf = NULL;
	f->fd = -1;
}

/* A mapping left out for the process's shares of fds and modules: said once. */
static void left_out(struct unwinder *u, const struct mapping *m)
{
	if (!u->nr_over++)
		log_warn("unwinding: process %d maps more objects than fnprof keeps for it (%ld files, %zu "
			 "mappings); %s and others are left out, their frames end stacks", u->pid, u->max_fds,
			 u->max_modules, m->path);
}

/* The file mapped at m: read once however many mappings it has. NULL when out of memory or over the share. */
static struct uw_file *file_of(struct unwinder *u, const struct mapping *m, bool vdso)
{
	dev_t dev = makedev(m->dev_major, m->dev_minor);
	size_t i = vdso ? (size_t)-1 : fileidx_get(&u->by_inode, dev, m->inode);
	struct uw_file *f;

	if (i != (size_t)-1)
		return u->files[i];
	if (u->nr_fds >= u->max_fds || atomic_load(&fds_held) >= fds_cap()) {
		left_out(u, m);
		return NULL;
	}
	if (ARRAY_RESERVE(u->files, u->nr_files + 1, u->cap_files) || !(f = calloc(1, sizeof(*f))))
		return NULL;
	if (!vdso && m->inode && fileidx_put(&u->by_inode, dev, m->inode, u->nr_files)) {
		free(f);
		return NULL;
	}
	u->files[u->nr_files++] = f;
	open_file(u, f, m, vdso);
	return f;
}

/*
 * Gives libdwfl the object mapped executable at m; base: where its offset
 * 0 lies. Mappings come in address order: one over the last module given
 * (the same object's, or one libdwfl would refuse) is not given.
 */
static void report_mapping(struct unwinder *u, const struct mapping *m)
{
	bool vdso = !strcmp(m->path, "[vdso]");
	__u64 base = m->start - m->pgoff, low, high;
	struct uw_file *f;
	Dwfl_Module *mod;
	void **ud;

	if (!m->exec || (m->path[0] != '/' && !vdso) || base < u->high_reported)
		return;
	if (u->nr_modules >= u->max_modules) {
		left_out(u, m);
		return;
	}
	f = file_of(u, m, vdso);
	if (!f || !f->elf)
		return;
	/* As dwfl_report_elf places it: an ET_EXEC where it says, an ET_DYN with offset 0 at base. */
	low = f->e_type == ET_EXEC ? f->vaddr : base;
	high = f->e_type == ET_EXEC ? f->vend : base - f->vaddr + f->vend;
	if (low < u->high_reported || high <= low)
		return;
	mod = dwfl_report_module(u->dwfl, m->path, low, high);
	if (!mod)
		return;
	dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
	*ud = f;
	u->high_reported = high;
	u->nr_modules++;
}

/* A digest of the executable file mappings: libdwfl's modules are redone when it changes. */
static __u64 maps_digest(const struct procmaps *pm)
{
	__u64 h = 1469598103934665603ULL;
	size_t i;
	const char *c;

	for (i = 0; i < pm->nr; i++) {
		const struct mapping *m = &pm->maps[i];

		if (!m->exec)
			continue;
		h = (h ^ m->start) * 1099511628211ULL;
		h = (h ^ m->pgoff) * 1099511628211ULL;
		h = (h ^ m->inode) * 1099511628211ULL;
		for (c = m->path; *c; c++)
			h = (h ^ (unsigned char)*c) * 1099511628211ULL;
	}
	return h;
}

/* Ends the libdwfl session (its modules drop their references), then the files. */
static void drop_objects(struct unwinder *u)
{
	size_t i;

	if (u->dwfl)
		dwfl_end(u->dwfl);
	u->dwfl = NULL;
	u->attached = false;
	for (i = 0; i < u->nr_files; i++) {
		if (u->files[i]->elf)
			elf_end(u->files[i]->elf);
		if (u->files[i]->fd >= 0)
			close(u->files[i]->fd);
		free(u->files[i]);
	}
	u->nr_files = 0;
	fileidx_clear(&u->by_inode);
	atomic_fetch_sub(&fds_held, u->nr_fds);
	u->nr_fds = 0;
	u->nr_modules = 0;
	u->high_reported = 0;
}

static int exec_range_cmp(const void *a, const void *b)
{
	const struct exec_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The executable mappings as read now, of files and of none (JIT code): a return address found without CFI lies in one. */
static void keep_exec_ranges(struct unwinder *u, const struct procmaps *pm)
{
	size_t i;

	u->nr_exec = 0;
	if (ARRAY_RESERVE(u->exec, pm->nr + pm->nr_anon, u->cap_exec))
		return;
	for (i = 0; i < pm->nr; i++)
		if (pm->maps[i].exec)
			u->exec[u->nr_exec++] = (struct exec_range){ pm->maps[i].start, pm->maps[i].end };
	for (i = 0; i < pm->nr_anon; i++)
		u->exec[u->nr_exec++] = (struct exec_range){ pm->anon[i].start, pm->anon[i].end };
	qsort(u->exec, u->nr_exec, sizeof(*u->exec), exec_range_cmp);
}

/* What was learnt of addresses: another object, or other code, may be there now. */
static void forget_addresses(struct unwinder *u)
{
	if (u->cfi)
		memset(u->cfi, 0, CFI_SLOTS * sizeof(*u->cfi));
	if (u->code)
		memset(u->code, 0, CODE_SLOTS * sizeof(*u->code));
}

/*
 * The process's mappings now; gone (or exiting) before it was first
 * unwound: those read when it was first sampled, if any (u->gone).
 */
static int load_maps(struct unwinder *u, struct procmaps **pm)
{
	int err = procmaps_load(u->pid, pm);

	if (!err && !(*pm)->nr) {
		procmaps_free(*pm);
		err = -ESRCH;
	}
	if (err && !u->dwfl && u->snap && !mapsnap_get(u->snap, u->pid, pm)) {
		u->gone = true;
		return 0;
	}
	return err;
}

/*
 * Gives libdwfl the objects mapped now, when they changed (exec, dlopen,
 * dlclose). A new session from scratch: libdwfl refuses a module over the
 * range of one it has, and an exec replaces them all. Paced (maps_pace):
 * a failed walk asks for this, and 60000 mappings take 0.3 s to read.
 */
static void report_objects(struct unwinder *u)
{
	struct procmaps *pm;
	__u64 digest;
	size_t i;

	maps_pace_begin(&u->pace);
	if (load_maps(u, &pm)) {
		maps_pace_end(&u->pace, REREAD_MIN_S, u->gate);
		return;
	}
	digest = maps_digest(pm);
	keep_exec_ranges(u, pm);
	if (!u->dwfl || digest != u->digest) {
		drop_objects(u);
		forget_addresses(u);
		u->dwfl = dwfl_begin(&dwfl_callbacks);
		if (u->dwfl) {
			dwfl_report_begin(u->dwfl);
			for (i = 0; i < pm->nr; i++)
				report_mapping(u, &pm->maps[i]);
			dwfl_report_end(u->dwfl, NULL, NULL);
			u->digest = digest;
		}
	}
	procmaps_free(pm);
	maps_pace_end(&u->pace, REREAD_MIN_S, u->gate);
}

/* --- the thread callbacks: one thread, the sample's, with its registers and stack copy --- */

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct unwinder *u = arg;

	if (*thread_argp)
		return 0;
	*thread_argp = u;
	return u->s->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	*thread_argp = arg;
	return true;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct unwinder *u = arg;
	__u64 sp = u->s->regs[FNPROF_REG_SP];
	__u32 i;

	if (addr < sp || addr - sp + sizeof(*result) > u->s->stack_len) {
		u->ran_off |= addr >= sp;
		return false;  /* beyond the copy: the walk ends there */
	}
	memcpy(result, u->stack + (addr - sp), sizeof(*result));
	/* A return address that a uretprobe replaced: the original one. */
	for (i = 0; i < u->s->nr_rets && i < FNPROF_MAX_RETS; i++)
		if (u->s->ret_slot[i] == addr)
			*result = u->s->ret_addr[i];
	return true;
}

/*
 * At a caller found without CFI (framestep): the registers known there, and
 * the return address less one as the pc, so that libdwfl looks up the CFI
 * of the call, as it does for every return address but the first frame's.
 */
static bool restart_registers(Dwfl_Thread *thread, const struct fs_regs *r)
{
	Dwarf_Word v;
	int i;

	for (i = 0; i < FS_REG_IP; i++) {
		v = r->regs[i];
		if (r->mask & 1u << i && !dwfl_thread_state_registers(thread, i, 1, &v))
			return false;
	}
	dwfl_thread_state_register_pc(thread, r->regs[FS_REG_IP] - 1);
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct unwinder *u = arg;
	Dwarf_Word regs[FNPROF_NR_REGS];
	int i;

	if (u->restarted)
		return restart_registers(thread, &u->next);
	for (i = 0; i < FNPROF_NR_REGS; i++)
		regs[i] = u->s->regs[i];
	return dwfl_thread_state_registers(thread, 0, FNPROF_NR_REGS, regs);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

struct unwinder *unwinder_new(pid_t pid, struct maps_pace *gate)
{
	struct unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->pid = pid;
	u->gate = gate;
	u->max_fds = gate ? fds_cap() / UNWIND_SHARES : fds_cap();
	u->max_modules = gate ? UNWIND_MAX_MODULES / UNWIND_SHARES : UNWIND_MAX_MODULES;
	elf_version(EV_CURRENT);
	u->arch_fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	u->arch_elf = u->arch_fd >= 0 ? elf_begin(u->arch_fd, ELF_C_READ, NULL) : NULL;
	u->cfi = calloc(CFI_SLOTS, sizeof(*u->cfi));  /* NULL: every frame left to libdwfl, as before */
	if (sigbus_guard_init())
		log_warn("unwinding: cannot catch SIGBUS (%s): a target that truncates a mapped object can stop fnprof",
			 strerror(errno));
	/* The objects are reported at the first sample: a command about to be launched has not exec'd yet. */
	return u;
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	drop_objects(u);
	free(u->files);
	free(u->exec);
	free(u->cfi);
	free(u->code);
	fileidx_free(&u->by_inode);
	if (u->arch_elf)
		elf_end(u->arch_elf);
	if (u->arch_fd >= 0)
		close(u->arch_fd);
	free(u);
}

static bool cfi_covers(Dwarf_CFI *cfi, Dwarf_Addr pc)
{
	Dwarf_Frame *f;

	if (!cfi || dwarf_cfi_addrframe(cfi, pc, &f))
		return false;
	free(f);
	return true;
}

/*
 * Whether libdwfl has CFI for pc (a frame's address; a return address less
 * one), looked up as its frame_unwind.c does: .eh_frame, then .debug_frame.
 * Without, libdwfl would follow rbp unchecked. Remembered per address.
 */
static bool cfi_at(struct unwinder *u, __u64 pc)
{
	struct cfi_slot *c;
	Dwfl_Module *mod;
	Dwarf_CFI *cfi;
	Dwarf_Addr bias;

	if (!u->cfi)
		return true;
	c = &u->cfi[(pc * 0x9e3779b97f4a7c15ULL) >> 53];  /* CFI_SLOTS: 2^11 */
	if (c->pc == pc && pc)
		return c->cfi;
	c->pc = pc;
	c->cfi = false;
	mod = dwfl_addrmodule(u->dwfl, pc);
	if (!mod)
		return false;
	cfi = dwfl_module_eh_cfi(mod, &bias);   /* bias set by the call: apart from its use */
	c->cfi = cfi_covers(cfi, pc - bias);
	if (!c->cfi) {
		cfi = dwfl_module_dwarf_cfi(mod, &bias);
		c->cfi = cfi_covers(cfi, pc - bias);
	}
	return c->cfi;
}

/* What the code at ip does up to its ret: read from the process once per address. NULL: out of memory. */
static const struct fs_epilogue *epilogue_at(struct unwinder *u, __u64 ip)
{
	unsigned char buf[CODE_READ];
	struct code_slot *c;
	char path[64];
	ssize_t n = -1;
	int fd;

	if (!u->code && !(u->code = calloc(CODE_SLOTS, sizeof(*u->code))))
		return NULL;
	c = &u->code[(ip * 0x9e3779b97f4a7c15ULL) >> 55];  /* CODE_SLOTS: 2^9 */
	if (c->ip == ip && ip)
		return &c->e;
	snprintf(path, sizeof(path), "/proc/%d/mem", u->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = pread(fd, buf, sizeof(buf), ip);
		close(fd);
	}
	framestep_decode(buf, n > 0 ? (size_t)n : 0, &c->e);
	c->ip = ip;
	return &c->e;
}

static bool read_word(void *ctx, __u64 addr, __u64 *val)
{
	Dwarf_Word w;

	if (!memory_read(NULL, addr, &w, ctx))
		return false;
	*val = w;
	return true;
}

/* Whether addr lies in an executable mapping as last read (in address order). */
static bool in_exec(void *ctx, __u64 addr)
{
	const struct unwinder *u = ctx;
	size_t lo = 0, hi = u->nr_exec, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (addr < u->exec[mid].start)
			hi = mid;
		else if (addr >= u->exec[mid].end)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

/* The registers of a frame libdwfl found that a step without CFI needs or carries to the caller. */
static void take_regs(Dwfl_Frame *state, struct fs_regs *r, __u64 ip)
{
	static const int wanted[] = { 3, FS_REG_BP, FS_REG_SP, 12, 13, 14, 15 };
	Dwarf_Word v;
	size_t i;

	r->mask = 1u << FS_REG_IP;
	r->regs[FS_REG_IP] = ip;
	for (i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++)
		if (!dwfl_frame_reg(state, wanted[i], &v)) {
			r->regs[wanted[i]] = v;
			r->mask |= 1u << wanted[i];
		}
}

/*
 * Each frame libdwfl finds: recorded (but the first of a walk restarted at
 * a caller found here: recorded already), then, where libdwfl has no CFI
 * for it, the walk stops for step_here to find its caller.
 */
static int on_frame(Dwfl_Frame *state, void *arg)
{
	struct unwinder *u = arg;
	bool first = !u->seg_frames++;
	Dwarf_Addr pc;

	if (!dwfl_frame_pc(state, &pc, NULL) || !pc)
		return DWARF_CB_ABORT;
	if (!first || !u->restarted) {
		u->ips[u->n++] = pc;
		u->cnt.cfi += !first;
	}
	if (u->n >= u->max)
		return DWARF_CB_ABORT;
	if (cfi_at(u, first ? pc : pc - 1))
		return DWARF_CB_OK;
	take_regs(state, &u->at, first && u->restarted ? pc + 1 : pc);
	u->need_step = true;
	return DWARF_CB_ABORT;
}

/* The caller of the frame on_frame stopped at, by its epilogue or frame pointer. false: none found. */
static bool step_here(struct unwinder *u)
{
	const struct fs_mem m = { .read = read_word, .exec = in_exec, .ctx = u };
	enum fs_method how = framestep(&u->at, epilogue_at(u, u->at.regs[FS_REG_IP]), &m, &u->next);

	if (how == FS_NONE)
		return false;
	u->ips[u->n++] = u->next.regs[FS_REG_IP];
	u->cnt.fp += how == FS_FP;
	u->cnt.epilogue += how == FS_EPILOGUE;
	return true;
}

/* libdwfl's walks of the sample, from its registers, then from each caller found by step_here. */
static int walk_frames(struct unwinder *u)
{
	int err;

	u->restarted = false;
	memset(&u->cnt, 0, sizeof(u->cnt));
	for (;;) {
		u->seg_frames = 0;
		u->need_step = false;
		err = dwfl_getthread_frames(u->dwfl, u->s->tid, on_frame, u);
		if (!u->need_step)
			return err;
		if (!step_here(u))
			return -1;
		if (u->n >= u->max)
			return 0;
		u->restarted = true;
	}
}

/* One walk of the sample's stack into ips. 0, or non-zero when it ended on an error. */
static int walk(struct unwinder *u, const struct dwarf_sample *s, __u64 *ips, int max)
{
	u->n = 0;
	if (!u->dwfl)
		return -1;
	if (!u->attached) {
		/*
		 * Given an ELF, libdwfl keeps a backend of its own for the process; without, it borrows
		 * the first module's, which goes when an exec replaces the modules.
		 */
		u->attached = u->arch_elf && dwfl_attach_state(u->dwfl, u->arch_elf, u->pid, &thread_callbacks, u);
		if (!u->attached) {
			log_debug("unwinding: cannot attach to process %d: %s", u->pid, dwfl_errmsg(-1));
			return -1;
		}
	}
	u->s = s;
	u->stack = (const unsigned char *)(s + 1);
	u->ips = ips;
	u->max = max;
	u->ran_off = false;
	return walk_frames(u);
}

/*
 * walk() with the objects re-read first where needed, in a SIGBUS guard:
 * libdwfl maps the objects, and a target may truncate one under it. Then
 * the walk is dropped (frames read from zeros), said once, and the objects
 * are reported again (libelf sees the new size and refuses what is gone).
 */
static int guarded_walk(struct unwinder *u, const struct dwarf_sample *s, __u64 *ips, int max)
{
	__u64 ip = s->regs[FNPROF_REG_IP];
	unsigned long mark = sigbus_guard_begin();
	int err;

	/* An ip in no object known: something was mapped since (exec, dlopen); look again (paced). */
	if ((!u->dwfl || !dwfl_addrmodule(u->dwfl, ip)) && maps_pace_due(&u->pace, u->gate))
		report_objects(u);
	err = walk(u, s, ips, max);
	/* Stopped at a caller in no object known: mapped since (exec, dlopen); look again, then retry. */
	if (err && !u->ran_off && maps_pace_due(&u->pace, u->gate)) {
		report_objects(u);
		err = walk(u, s, ips, max);
	}
	if (sigbus_guard_end(mark)) {
		if (!u->nr_truncated++)
			log_warn("unwinding: an object of process %d was truncated while fnprof read it: "
				 "stacks through it are cut at the sampled address", u->pid);
		u->digest = 0;
		u->pace.next = 0;
		u->n = 0;
		u->ran_off = false;
		return -1;
	}
	return err;
}

void unwinder_set_snapshots(struct unwinder *u, struct mapsnap *m)
{
	u->snap = m;
}

void unwinder_prepare(struct unwinder *u)
{
	unsigned long mark = sigbus_guard_begin();

	report_objects(u);
	if (sigbus_guard_end(mark))
		u->digest = 0;   /* an object truncated under libdwfl: read again at the first walk */
}

bool unwinder_has_objects(const struct unwinder *u)
{
	return u->dwfl;
}

int unwinder_unwind(struct unwinder *u, const struct dwarf_sample *s, __u64 *ips, int max, bool *truncated,
		    struct unwind_counts *counts)
{
	__u64 ip = s->regs[FNPROF_REG_IP];
	int err;

	*truncated = false;
	if (max <= 0 || !ip)
		return 0;
	err = guarded_walk(u, s, ips, max);
	/* Why walks stop short, for -v: the first few only, there is one per sample. */
	if (err && u->n < max && u->nr_logged++ < 10)
		log_debug("unwinding: stopped after %d frames at ip %llx sp %llx: %s", u->n, (unsigned long long)ip,
			  (unsigned long long)s->regs[FNPROF_REG_SP], dwfl_errmsg(-1));
	if (!u->n)
		ips[u->n++] = ip;
	else if (counts) {
		counts->cfi += u->cnt.cfi;
		counts->fp += u->cnt.fp;
		counts->epilogue += u->cnt.epilogue;
	}
	*truncated = u->ran_off && u->n < max;
	return u->n;
}
