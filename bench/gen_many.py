#!/usr/bin/env python3
"""Writes a C program with N small functions f_0..f_N-1 (for attach-time benchmarks)."""
import sys

n = int(sys.argv[1])
print("#include <stdio.h>\n#include <unistd.h>\n#include <signal.h>")
for i in range(n):
    print(f"__attribute__((noinline)) int f_{i}(int x) {{ __asm__ volatile(\"\" : \"+r\"(x)); return x + {i}; }}")
print("int (*fns[])(int) = {" + ", ".join(f"f_{i}" for i in range(n)) + "};")
print("""int main(void) {
	long s = 0;
	printf("ready %d\\n", getpid());
	fflush(stdout);
	for (;;) { for (unsigned i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) s += fns[i](i); usleep(1000); }
	return (int)s;
}""")
