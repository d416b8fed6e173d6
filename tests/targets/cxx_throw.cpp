// SPDX-License-Identifier: GPL-2.0
/*
 * C++ exceptions thrown through a traced function. Prints its result, which
 * must be the same traced or not; a uretprobe on middle() breaks the unwinder.
 * lib::mix() beside it calls nothing, so no exception can pass its frame:
 * its return may be a uretprobe (issue 22).
 * Usage: cxx_throw N   (every third call of middle() throws through it)
 * Truth on stderr: "truth mix calls=N", "truth middle calls=N returned=M".
 */
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace lib {

__attribute__((noinline)) long mix(long x)
{
	for (int k = 0; k < 8; k++)
		x = x * 6364136223846793005L + 1442695040888963407L;
	return x;
}

} // namespace lib

namespace app {

__attribute__((noinline)) int thrower(int i)
{
	if (i % 3 == 0)
		throw std::runtime_error("every third");
	return i;
}

__attribute__((noinline)) int middle(int i)
{
	long m = lib::mix(i);
	int r = thrower(i);

	__asm__ volatile("" : "+r"(r));
	return r + 1 + (int)(m & 1);
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
