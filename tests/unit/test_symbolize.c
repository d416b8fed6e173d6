// SPDX-License-Identifier: GPL-2.0
/*
 * The sampler's symbolizer on fixture ELF files built here: a PIE and a
 * non-PIE executable, a shared object, and stripped copies. Each fixture runs,
 * prints the runtime addresses of its functions, and waits; the symbolizer
 * must map those addresses back to (function, object) through the process's
 * mappings, also after the process has exited.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stacks/symbolize.h"
#include "unit.h"

#define DIR "/tmp/fnprof-test-symbolize"

static const char lib_src[] =
	"__attribute__((noinline)) unsigned long fx_lib_func(unsigned long x)\n"
	"{ for (int i = 0; i < 100; i++) x = x * 3 + i; return x; }\n";

static const char prog_src[] =
	"#include <stdio.h>\n#include <unistd.h>\n"
	"unsigned long fx_lib_func(unsigned long);\n"
	"__attribute__((noinline)) unsigned long fx_main_func(unsigned long x)\n"
	"{ for (int i = 0; i < 100; i++) x = x * 5 + i; return x; }\n"
	"int main(void) {\n"
	"  printf(\"%lx %lx %lu\\n\", (unsigned long)fx_main_func, (unsigned long)fx_lib_func,\n"
	"         fx_main_func(1) + fx_lib_func(2));\n"
	"  fflush(stdout); pause(); return 0; }\n";

static int sh(const char *cmd)
{
	int rc = system(cmd);

	if (rc)
		printf("# command failed (%d): %s\n", rc, cmd);
	return rc;
}

/* Builds every fixture once: prog_pie, prog_nopie, prog_stripped, against libfx.so / libfx_stripped.so. */
static int build_fixtures(void)
{
	static int built = -1;
	FILE *f;

	if (built >= 0)
		return built;
	built = sh("rm -rf " DIR " && mkdir -p " DIR);
	f = built ? NULL : fopen(DIR "/lib.c", "w");
	if (f) {
		fputs(lib_src, f);
		fclose(f);
		f = fopen(DIR "/prog.c", "w");
	}
	if (!f)
		return built = 1;
	fputs(prog_src, f);
	fclose(f);
	built = sh("cd " DIR " && cc -O2 -fno-omit-frame-pointer -shared -fPIC lib.c -o libfx.so"
		   " && mkdir -p s && cp libfx.so s/libfx.so && strip s/libfx.so"
		   " && cc -O2 -fno-omit-frame-pointer -pie -fPIE prog.c -o prog_pie -L. -lfx -Wl,-rpath," DIR
		   " && cc -O2 -fno-omit-frame-pointer -no-pie prog.c -o prog_nopie -L. -lfx -Wl,-rpath," DIR
		   " && cc -O2 -pie -fPIE prog.c -o prog_stripped -L. -lfx -Wl,-rpath," DIR "/s"
		   " && strip prog_stripped");
	return built;
}

struct fixture {
	pid_t pid;
	unsigned long main_func, lib_func;
};

/* Starts DIR/name and reads the addresses it prints. 0 or -1. */
static int spawn(const char *name, struct fixture *fx)
{
	char path[256], line[256];
	int pfd[2];
	FILE *f;

	snprintf(path, sizeof(path), DIR "/%s", name);
	if (build_fixtures() || pipe(pfd))
		return -1;
	fx->pid = fork();
	if (fx->pid == 0) {
		/* Gone with the test should it crash: its stderr is the runner's pipe, held open. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(pfd[1], 1);
		close(pfd[0]);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	f = fdopen(pfd[0], "r");
	if (!f || !fgets(line, sizeof(line), f) ||
	    sscanf(line, "%lx %lx", &fx->main_func, &fx->lib_func) != 2) {
		if (f)
			fclose(f);
		kill(fx->pid, SIGKILL);
		waitpid(fx->pid, NULL, 0);
		return -1;
	}
	fclose(f);
	return 0;
}

static void reap(struct fixture *fx)
{
	kill(fx->pid, SIGKILL);
	waitpid(fx->pid, NULL, 0);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/* The executable's and the library's functions, a few bytes into each (as a sample would be). */
static int check_names(struct symbolizer *s, const struct fixture *fx, const char *exe)
{
	struct frame_info fi;

	symbolize_user(s, fx->main_func + 4, &fi);
	if (!fi.known || strcmp(fi.func, "fx_main_func") || !ends_with(fi.object, exe))
		return printf("# %s: got %s in %s\n", exe, fi.func, fi.object), -1;
	symbolize_user(s, fx->lib_func + 4, &fi);
	if (!fi.known || strcmp(fi.func, "fx_lib_func") || !ends_with(fi.object, "/libfx.so"))
		return printf("# lib: got %s in %s\n", fi.func, fi.object), -1;
	if (fi.map_start > fx->lib_func || fi.map_limit <= fx->lib_func)
		return printf("# lib mapping %llx-%llx\n", fi.map_start, fi.map_limit), -1;
	return 0;
}

static void symbolize_exe(const char *name)
{
	struct symbolizer *s = NULL;
	struct fixture fx;
	int ok;

	CHECK(spawn(name, &fx) == 0);
	s = symbolizer_new(fx.pid, 0);
	ok = s && !check_names(s, &fx, name);
	reap(&fx);
	/* Gone now: what was read while it ran must still answer. */
	symbolizer_refresh(s);
	ok = ok && !check_names(s, &fx, name);
	symbolizer_free(s);
	CHECK(ok);
}

static void pie_executable_and_library(void)
{
	symbolize_exe("prog_pie");
}

static void non_pie_executable(void)
{
	symbolize_exe("prog_nopie");
}

/* A stripped executable: its functions named object+0xADDR from FDEs; a stripped library keeps .dynsym. */
static void stripped_objects(void)
{
	struct symbolizer *s = NULL;
	struct frame_info fi, li;
	struct fixture fx;
	bool ok;

	CHECK(spawn("prog_stripped", &fx) == 0);
	s = symbolizer_new(fx.pid, 0);
	if (s) {
		symbolize_user(s, fx.main_func + 4, &fi);
		symbolize_user(s, fx.lib_func + 4, &li);
	}
	reap(&fx);
	CHECK(s);
	ok = fi.known && !strncmp(fi.func, "prog_stripped+0x", 16) && ends_with(fi.object, "/prog_stripped") &&
	     li.known && !strcmp(li.func, "fx_lib_func") && ends_with(li.object, "/s/libfx.so");
	if (!ok)
		printf("# got %s in %s, %s in %s\n", fi.func, fi.object, li.func, li.object);
	symbolizer_free(s);
	CHECK(ok);
}

/* Frames keep their strings across refreshes of the mappings (they are cached per stack). */
static void names_outlive_refresh(void)
{
	struct symbolizer *s = NULL;
	struct frame_info a, b;
	struct fixture fx;
	bool ok;

	CHECK(spawn("prog_pie", &fx) == 0);
	s = symbolizer_new(fx.pid, 0);
	if (s) {
		symbolize_user(s, fx.main_func, &a);
		symbolizer_refresh(s);
		symbolizer_refresh(s);
		symbolize_user(s, fx.main_func, &b);
	}
	reap(&fx);
	CHECK(s);
	/* The same strings: the sampler compares functions and objects by pointer. */
	ok = a.object == b.object && a.func == b.func && ends_with(a.object, "/prog_pie");
	symbolizer_free(s);
	CHECK(ok);
}

/* An address in no mapping (heap, JIT, or garbage from a broken stack) is [unknown] in [unknown]. */
static void unmapped_address(void)
{
	struct symbolizer *s = symbolizer_new(getpid(), 0);
	struct frame_info fi;

	CHECK(s);
	symbolize_user(s, 16, &fi);
	symbolizer_free(s);
	CHECK(!fi.known && !strcmp(fi.func, "[unknown]") && !strcmp(fi.object, "[unknown]"));
}

#define COPIES 30

/*
 * A process that dlopens and dlcloses a new object again and again (plugins
 * under new names): the symbolizer holds the objects mapped now, and those
 * unloaded whose range nothing has taken since (their samples are named at
 * the report), not every one ever seen: here each plugin takes the range of
 * the one before, and only the last stays. The names of frames symbolized
 * before stay readable.
 */
static void unmapped_objects_dropped(void)
{
	struct symbolizer *s = build_fixtures() ? NULL : symbolizer_new(getpid(), 0);
	struct frame_info fi[COPIES];
	char cmd[256], path[128];
	size_t before, most = 0;
	bool ok = true;
	int i;

	CHECK(s);
	before = symbolizer_nr_objects(s);
	for (i = 0; i < COPIES && ok; i++) {
		void *h, *fn;

		snprintf(path, sizeof(path), DIR "/plugin%d.so", i);
		snprintf(cmd, sizeof(cmd), "cp " DIR "/libfx.so %s", path);
		h = sh(cmd) ? NULL : dlopen(path, RTLD_NOW | RTLD_LOCAL);
		fn = h ? dlsym(h, "fx_lib_func") : NULL;
		symbolizer_refresh(s);
		if (fn)
			symbolize_user(s, (unsigned long)fn + 4, &fi[i]);
		ok = fn && fi[i].known && !strcmp(fi[i].func, "fx_lib_func") && !strcmp(fi[i].object, path);
		if (symbolizer_nr_objects(s) > most)
			most = symbolizer_nr_objects(s);
		if (h)
			dlclose(h);
		unlink(path);
	}
	symbolizer_refresh(s);
	/* Frames cached before (per stack) keep their strings: one copy of each name. */
	for (int k = 0; ok && k < COPIES; k++) {
		snprintf(path, sizeof(path), DIR "/plugin%d.so", k);
		ok = fi[k].func == fi[0].func && !strcmp(fi[k].func, "fx_lib_func") && !strcmp(fi[k].object, path);
	}
	printf("# objects held: %zu at start, at most %zu, %zu at the end\n", before, most,
	       symbolizer_nr_objects(s));
	ok = ok && most <= before + 2 && symbolizer_nr_objects(s) <= before + 1;
	symbolizer_free(s);
	CHECK(ok);
}

/*
 * A library unloaded is kept (its samples are named at the report), until
 * another takes its range: one loaded there since the last refresh is found
 * by a fresh reading, not named with the unloaded one's symbols.
 */
static void kept_range_taken_by_a_new_library(void)
{
	struct symbolizer *s = build_fixtures() ? NULL : symbolizer_new(getpid(), 0);
	struct frame_info a, b;
	void *ha = NULL, *hb = NULL, *fa = NULL, *fb = NULL;
	bool ok;

	CHECK(s);
	ok = !sh("cp " DIR "/libfx.so " DIR "/plugin_a.so && cp " DIR "/libfx.so " DIR "/plugin_b.so");
	ha = ok ? dlopen(DIR "/plugin_a.so", RTLD_NOW | RTLD_LOCAL) : NULL;
	fa = ha ? dlsym(ha, "fx_lib_func") : NULL;
	symbolizer_refresh(s);
	if (fa)
		symbolize_user(s, (unsigned long)fa + 4, &a);
	if (ha)
		dlclose(ha);
	symbolizer_refresh(s);   /* plugin_a kept: unmapped, its range free */
	hb = fa ? dlopen(DIR "/plugin_b.so", RTLD_NOW | RTLD_LOCAL) : NULL;
	fb = hb ? dlsym(hb, "fx_lib_func") : NULL;
	if (fb)
		symbolize_user(s, (unsigned long)fb + 4, &b);
	ok = fa && fb && ends_with(a.object, "/plugin_a.so") && ends_with(b.object, "/plugin_b.so") &&
	     !strcmp(b.func, "fx_lib_func");
	printf("# plugin_b loaded %s plugin_a's range\n", fa == fb ? "at" : "away from");
	if (hb)
		dlclose(hb);
	symbolizer_free(s);
	CHECK(ok);
	CHECK(fa == fb);   /* the case this is about: the range freed taken again */
}

int main(void)
{
	RUN(pie_executable_and_library);
	RUN(non_pie_executable);
	RUN(stripped_objects);
	RUN(names_outlive_refresh);
	RUN(unmapped_address);
	RUN(unmapped_objects_dropped);
	RUN(kept_range_taken_by_a_new_library);
	sh("rm -rf " DIR);
	UNIT_EXIT();
}
