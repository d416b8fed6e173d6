// A cgo program: C code runs on its OS thread's stack, not a goroutine's, and does not move
// between threads inside a call: its calls are timed per thread, with the on/off-CPU split.
// c_spin() times itself (CLOCK_MONOTONIC, entry to return); truth on stderr.
// Usage: gotarget-cgo G CALLS   (G goroutines x CALLS calls of c_spin(50 us))
package main

/*
#include <time.h>

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

__attribute__((noinline)) long long c_spin(long long ns)
{
	long long t0 = now_ns(), t;

	while ((t = now_ns()) - t0 < ns)
		;
	return now_ns() - t0;
}
*/
import "C"

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
)

var total int64

// worker makes a goroutine's calls of c_spin; traced as main.worker.
//
//go:noinline
func worker(calls int) {
	for i := 0; i < calls; i++ {
		atomic.AddInt64(&total, int64(C.c_spin(50000)))
	}
}

func main() {
	goroutines, _ := strconv.Atoi(os.Args[1])
	calls, _ := strconv.Atoi(os.Args[2])
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			// Done after worker has returned: with a deferred Done inside it, main could exit
			// between the Done and its return, and that call never returned (3 of 4 under load).
			worker(calls)
			wg.Done()
		}()
	}
	wg.Wait()
	n := goroutines * calls
	fmt.Fprintf(os.Stderr, "truth cspin calls=%d avg_ns=%.0f\n", n, float64(total)/float64(n))
	fmt.Println("cgo done", n)
}
