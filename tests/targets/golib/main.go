// A Go program that maps libc and libtarget.so and calls lib_spin through cgo, from goroutines
// whose stacks the collector scans meanwhile: what system-wide tracing must leave unharmed.
// Usage: gotarget-lib G CALLS   (G goroutines x CALLS calls of lib_spin(20 us))
// Its stdout is the same in every run; the truth (calls made) on stderr.
package main

/*
#cgo LDFLAGS: -ltarget
unsigned long lib_spin(unsigned int us);
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
)

var calls int64

// worker makes a goroutine's calls; each call's result is checked, so a corrupted return shows.
//
//go:noinline
func worker(n int) int {
	bad := 0
	for i := 0; i < n; i++ {
		if C.lib_spin(20) == 0 {
			bad++
		}
		atomic.AddInt64(&calls, 1)
	}
	return bad
}

func main() {
	goroutines, _ := strconv.Atoi(os.Args[1])
	n, _ := strconv.Atoi(os.Args[2])
	var wg sync.WaitGroup
	var bad int64
	stop := make(chan struct{})
	go func() { // the collector scans every goroutine's stack, again and again
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			atomic.AddInt64(&bad, int64(worker(n)))
			wg.Done()
		}()
	}
	wg.Wait()
	close(stop)
	fmt.Printf("golib done: %d goroutines x %d calls, %d bad results\n", goroutines, n, bad)
	fmt.Fprintf(os.Stderr, "truth lib_spin calls=%d\n", atomic.LoadInt64(&calls))
}
