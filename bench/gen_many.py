#!/usr/bin/env python3
"""Writes a C target with N functions f_0000 .. f_NNNN (for the attach-time-of-a-glob benchmark).
It prints "addr <hex>" for every function, waits for a byte on stdin, calls each once and exits."""
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
out = ["#include <stdio.h>", "#include <unistd.h>", "", "volatile long sink;", ""]
for i in range(n):
    out.append(f"__attribute__((noipa, used)) void f_{i:04d}(long x) {{ sink += x + {i}; }}")
out.append("")
out.append("static void (*const fns[])(long) = {")
out.extend(f"\tf_{i:04d}," for i in range(n))
out.append("};")
out.append("""
int main(void)
{
	char c;
	for (unsigned long i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		printf("addr %lx\\n", (unsigned long)fns[i]);
	printf("ready\\n");
	fflush(stdout);
	if (read(0, &c, 1) < 0)
		return 1;
	for (unsigned long i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		fns[i]((long)i);
	return 0;
}""")
print("\n".join(out))
