"""Seeds for fuzz_arch: the functions of ELF programs, one file each, in its input format.

Usage: code_seeds.py OUTDIR PROGRAM... (binutils' nm and objcopy read the programs).
Each seed is fuzz_arch's header (flags 0: no cold part) and a function's bytes.
"""
import os
import subprocess
import sys
import tempfile

MAX_SEEDS_PER_PROGRAM = 400
MAX_FUNCTION = 4096


def text_section(prog):
    """(vaddr, bytes) of the program's .text, or None."""
    out = subprocess.run(["objdump", "-h", prog], capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) > 4 and f[1] == ".text":
            vaddr = int(f[3], 16)
            with tempfile.NamedTemporaryFile() as tmp:
                subprocess.run(["objcopy", "-O", "binary", "--only-section=.text", prog, tmp.name],
                               check=True, capture_output=True)
                return vaddr, open(tmp.name, "rb").read()
    return None


def functions(prog):
    """(name, vaddr, size) of the program's sized function symbols (some twice)."""
    out = subprocess.run(["nm", "-S", "--defined-only", prog], capture_output=True, text=True).stdout
    # A stripped program (Debian's): its dynamic symbols.
    out += subprocess.run(["nm", "-D", "-S", "--defined-only", prog], capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "tT":
            yield f[3], int(f[0], 16), int(f[1], 16)


def write_seeds(outdir, prog):
    text = text_section(prog)
    if not text:
        return 0
    vaddr, code = text
    n = 0
    for name, addr, size in functions(prog):
        off = addr - vaddr
        if not 0 < size <= MAX_FUNCTION or off < 0 or off + size > len(code):
            continue
        with open(os.path.join(outdir, f"{os.path.basename(prog)}-{n}"), "wb") as f:
            f.write(b"\0\0\0" + code[off:off + size])
        n += 1
        if n == MAX_SEEDS_PER_PROGRAM:
            break
    return n


def main():
    outdir = sys.argv[1]
    total = sum(write_seeds(outdir, prog) for prog in sys.argv[2:])
    print(f"{total} functions as seeds in {outdir}")


if __name__ == "__main__":
    main()
