// SPDX-License-Identifier: GPL-2.0
/*
 * Functions whose names are longer than a table's column, and alike but for
 * their middle: two pipelines' handle_incoming_request. Each does WORK loop
 * iterations per call (CPU for the sampling table) and the target counts its
 * calls: "truth request calls=N" and "truth response calls=M".
 * Usage: longnames N M [WORK]
 */
#include <cstdio>
#include <cstdlib>

/* One pipeline's handler: the same code, a name of its own (the two differ only in the middle). */
#define PIPELINE(ns, k)                                                                          \
	namespace ns {                                                                           \
	class HttpConnectionHandler {                                                            \
	public:                                                                                  \
		__attribute__((noinline)) static unsigned long handle_incoming_request(unsigned long work) \
		{                                                                                \
			unsigned long s = 0;                                                     \
			for (unsigned long i = 0; i < work; i++)                                 \
				__asm__ volatile("" : "+r"(s) : "r"(i));                         \
			return s + k;                                                            \
		}                                                                                \
	};                                                                                       \
	}

namespace acme_enterprise_platform {
PIPELINE(request_processing_pipeline, 1)
PIPELINE(response_processing_pipeline, 2)
} // namespace acme_enterprise_platform

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 2000;
	unsigned long m = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000;
	unsigned long work = argc > 3 ? strtoul(argv[3], NULL, 10) : 100;
	unsigned long sum = 0, a = 0, b = 0;

	namespace acme = acme_enterprise_platform;
	/* Interleaved, so that both are on the CPU through the whole run. */
	while (a < n || b < m) {
		if (a < n && (b >= m || a * m <= b * n)) {
			sum += acme::request_processing_pipeline::HttpConnectionHandler::handle_incoming_request(work);
			a++;
		} else {
			sum += acme::response_processing_pipeline::HttpConnectionHandler::handle_incoming_request(work);
			b++;
		}
	}
	printf("sum %lu\n", sum);
	fprintf(stderr, "truth request calls=%lu\ntruth response calls=%lu\n", a, b);
	return 0;
}
