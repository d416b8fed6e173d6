// SPDX-License-Identifier: GPL-2.0
/*
 * C++ exceptions thrown through a traced function. Prints its result, which
 * must be the same traced or not; a uretprobe on middle() breaks the unwinder.
 * Usage: cxx_throw N   (every third call of middle() throws through it)
 */
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace app {

__attribute__((noinline)) int thrower(int i)
{
	if (i % 3 == 0)
		throw std::runtime_error("every third");
	return i;
}

__attribute__((noinline)) int middle(int i)
{
	int r = thrower(i);

	__asm__ volatile("" : "+r"(r));
	return r + 1;
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
	return 0;
}
