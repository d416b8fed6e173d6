"""A short libFuzzer run of the ELF symbol reader (make fuzz runs it longer)."""
import glob
import os
import shutil
import subprocess
import tempfile

from harness import BIN, Skip, check


def test_fuzz_elf_reader_briefly():
    fuzzer = os.path.join(BIN, "fuzz_symbols")
    if not os.path.exists(fuzzer):
        raise Skip("fuzz_symbols not built (needs clang's libFuzzer: libclang-rt-14-dev)")
    corpus = tempfile.mkdtemp(prefix="fnprof-fuzz-")
    try:
        # Seeds: real ELF files (executables, a shared object) to mutate from.
        for path in glob.glob(os.path.join(BIN, "*")):
            if os.path.isfile(path):
                shutil.copy(path, corpus)
        p = subprocess.run([fuzzer, "-max_total_time=15", "-max_len=65536", corpus],
                           capture_output=True, text=True, timeout=120)
        check(p.returncode == 0 and "Done" in p.stderr, f"fuzzer exit {p.returncode}:\n{p.stderr[-3000:]}")
    finally:
        shutil.rmtree(corpus)


def test_fuzz_code_reader_briefly():
    """Issue 37: the code reader (exits, entry placement, jump tables) on mutated functions."""
    fuzzer = os.path.join(BIN, "fuzz_arch")
    if not os.path.exists(fuzzer):
        raise Skip("fuzz_arch not built (needs clang's libFuzzer: libclang-rt-14-dev)")
    corpus = tempfile.mkdtemp(prefix="fnprof-fuzz-code-")
    try:
        # Seeds: real functions, with their switches, of the targets and of Debian's python.
        progs = [p for p in glob.glob(os.path.join(BIN, "*")) if os.path.isfile(p)] + ["/usr/bin/python3.11"]
        seeds = os.path.join(os.path.dirname(__file__), "fuzz", "code_seeds.py")
        subprocess.run(["python3", seeds, corpus] + [p for p in progs if os.path.exists(p)],
                       check=True, capture_output=True, timeout=120)
        # A crash's input is written to the working directory: the corpus's, removed after.
        p = subprocess.run([fuzzer, "-max_total_time=15", "-max_len=4096", corpus],
                           capture_output=True, text=True, timeout=120, cwd=corpus)
        check(p.returncode == 0 and "Done" in p.stderr, f"fuzzer exit {p.returncode}:\n{p.stderr[-3000:]}")
    finally:
        shutil.rmtree(corpus)
