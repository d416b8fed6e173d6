// SPDX-License-Identifier: GPL-2.0
/*
 * A C++ program that throws, with a leaf beside the throw: mix() calls
 * nothing, so no exception can pass its frame, and its return may be a
 * uretprobe (issue 22); middle() calls mix() and a thrower, so an exception
 * passes its frame: a uretprobe there breaks the unwinder.
 * Usage: cxx_leaf N   (N calls of middle(); every third throws through it)
 * Prints its result, the same traced or not, and "truth mix calls=N" on stderr.
 */
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace app {

__attribute__((noinline)) long mix(long x)
{
	for (int k = 0; k < 8; k++)
		x = x * 6364136223846793005L + 1442695040888963407L;
	return x;
}

__attribute__((noinline)) int thrower(int i)
{
	if (i % 3 == 0)
		throw std::runtime_error("every third");
	return i;
}

__attribute__((noinline)) long middle(int i)
{
	long m = mix(i);
	int r = thrower(i);

	__asm__ volatile("" : "+r"(r));
	return (m & 0xff) + r;
}

} // namespace app

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3000, caught = 0;
	long sum = 0;

	for (int i = 0; i < n; i++) {
		try {
			sum += app::middle(i);
		} catch (const std::exception &) {
			caught++;
		}
	}
	printf("sum %ld caught %d\n", sum, caught);
	fprintf(stderr, "truth mix calls=%d\ntruth middle calls=%d returned=%d\n", n, n, n - caught);
	return 0;
}
