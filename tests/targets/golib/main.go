// A Go program that maps libc and libtarget.so and calls lib_spin, and libc's dup and close, through
// cgo, from goroutines whose stacks the collector scans meanwhile: what system-wide tracing must leave
// unharmed.
// Usage: gotarget-lib G CALLS [PAUSE_US]   (G goroutines x CALLS calls of lib_spin(20 us), each
// followed by a sleep of PAUSE_US, none by default)
// Its stdout is the same in every run; the truth (calls made) on stderr.
package main

/*
#cgo LDFLAGS: -ltarget
#include <unistd.h>
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
	"time"
)

var calls int64

// worker makes a goroutine's calls; each call's result is checked, so a corrupted return shows.
//
//go:noinline
func worker(n int, pause time.Duration) int {
	bad := 0
	for i := 0; i < n; i++ {
		if C.lib_spin(20) == 0 || C.close(C.dup(2)) != 0 {
			bad++
		}
		atomic.AddInt64(&calls, 1)
		if pause > 0 {
			time.Sleep(pause)
		}
	}
	return bad
}

func main() {
	goroutines, _ := strconv.Atoi(os.Args[1])
	n, _ := strconv.Atoi(os.Args[2])
	var pause time.Duration
	if len(os.Args) > 3 {
		us, _ := strconv.Atoi(os.Args[3])
		pause = time.Duration(us) * time.Microsecond
	}
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
				time.Sleep(pause)
			}
		}
	}()
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			atomic.AddInt64(&bad, int64(worker(n, pause)))
			wg.Done()
		}()
	}
	wg.Wait()
	close(stop)
	fmt.Printf("golib done: %d goroutines x %d calls, %d bad results\n", goroutines, n, bad)
	fmt.Fprintf(os.Stderr, "truth lib_spin calls=%d\n", atomic.LoadInt64(&calls))
}
