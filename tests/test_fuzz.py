"""Short libFuzzer runs of the readers of what targets control (make fuzz runs them longer): ELF and
DWARF, functions' code and jump tables, sampled stacks, perf maps."""
import glob
import os
import shutil
import subprocess
import tempfile

from harness import BIN, Skip, check

# Leaks of the libraries' own (elfutils) that fnprof cannot free: named there, with why.
SUPPRESSIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz", "lsan.supp")


def fuzz_briefly(name, seconds, max_len, seed):
    """Runs fuzzer name for seconds on the corpus seed(dir) makes; fails on any crash it finds."""
    fuzzer = os.path.join(BIN, name)
    if not os.path.exists(fuzzer):
        raise Skip(f"{name} not built (needs clang's libFuzzer: libclang-rt-14-dev)")
    corpus = tempfile.mkdtemp(prefix=f"fnprof-{name}-")
    try:
        seed(corpus)
        # A crash's input is written to the working directory: the corpus's, removed after.
        env = dict(os.environ, LSAN_OPTIONS=f"suppressions={SUPPRESSIONS}")
        p = subprocess.run([fuzzer, f"-max_total_time={seconds}", f"-max_len={max_len}", corpus],
                           capture_output=True, text=True, timeout=120, cwd=corpus, env=env)
        check(p.returncode == 0 and "Done" in p.stderr, f"fuzzer exit {p.returncode}:\n{p.stderr[-3000:]}")
    finally:
        shutil.rmtree(corpus)


def built_files():
    return [p for p in glob.glob(os.path.join(BIN, "*")) if os.path.isfile(p)]


def test_fuzz_elf_reader_briefly():
    # Seeds: real ELF files (executables, a shared object) to mutate from.
    def seed(corpus):
        for path in built_files():
            shutil.copy(path, corpus)
    fuzz_briefly("fuzz_symbols", 15, 65536, seed)


def test_fuzz_crashes_found_before_stay_fixed():
    # Inputs on which a fuzzer once crashed (tests/fuzz/crashes/FUZZER-what): each runs clean now.
    # fuzz_symbols-inline-name-past-section: an inlined call's name, an inline DW_FORM_string at the
    # end of .debug_info without its NUL; libdw handed it out and inlines.c read past the section.
    crashes = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz", "crashes")
    env = dict(os.environ, LSAN_OPTIONS=f"suppressions={SUPPRESSIONS}")
    ran = 0
    for f in sorted(os.listdir(crashes)):
        fuzzer = os.path.join(BIN, f.split("-", 1)[0])
        if not os.path.exists(fuzzer):
            raise Skip(f"{os.path.basename(fuzzer)} not built (needs clang's libFuzzer: libclang-rt-14-dev)")
        p = subprocess.run([fuzzer, os.path.join(crashes, f)], capture_output=True, text=True, timeout=60, env=env)
        check(p.returncode == 0, f"{f}: fuzzer exit {p.returncode}:\n{p.stderr[-3000:]}")
        ran += 1
    check(ran >= 1, "no crash inputs found")


def test_fuzz_code_reader_briefly():
    """Issue 37: the code reader (exits, entry placement, jump tables) on mutated functions."""
    # Seeds: real functions, with their switches, of the targets and of Debian's python.
    def seed(corpus):
        progs = built_files() + [p for p in ["/usr/bin/python3.11"] if os.path.exists(p)]
        seeds = os.path.join(os.path.dirname(__file__), "fuzz", "code_seeds.py")
        subprocess.run(["python3", seeds, corpus] + progs, check=True, capture_output=True, timeout=120)
    fuzz_briefly("fuzz_arch", 15, 4096, seed)


def test_fuzz_stack_unwinder_briefly():
    """Issue 37: the DWARF unwinder on stack copies whose every byte the target chose."""
    def seed(corpus):
        with open(os.path.join(corpus, "zeros"), "wb") as f:
            f.write(bytes(17 * 8 + 1 + 16 * 16 + 4096))
    fuzz_briefly("fuzz_unwind", 10, 16384, seed)


def test_fuzz_perf_map_reader_briefly():
    """Issue 37: the perf map reader on text the target's JIT (or anything as its user) wrote."""
    def seed(corpus):
        with open(os.path.join(corpus, "map"), "w") as f:
            f.write("7f0000001000 100 LazyCompile:~main app.js:1\n7f0000001100 40 stub\n")
    fuzz_briefly("fuzz_perfmap", 10, 4096, seed)
