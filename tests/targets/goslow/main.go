// goslow: Go slow calls for --slow (issue 35). 4 goroutines run serve(), which calls handle() N/4
// times; handle spins ~10 us, and every 100th call (of all, i % 100 == 0) also parks its goroutine
// 5 ms in time.Sleep inside waitForDisk(). It measures its own truth on stderr:
//
//	truth slow calls=N sleeps=S over=O near=M
//
// sleeps: the calls that slept; over: calls of 2 ms or longer as handle timed them (first line to
// return); near: calls of 1.5-2 ms, which the probes' cost may tip over.
// Usage: goslow N
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

var counter, sleeps, over, near int64

//go:noinline
func spinFor(d time.Duration) int {
	n := 0
	for t0 := time.Now(); time.Since(t0) < d; n++ {
	}
	return n
}

//go:noinline
func waitForDisk() {
	time.Sleep(5 * time.Millisecond)
}

//go:noinline
func handle() int {
	t0 := time.Now()
	n := spinFor(10 * time.Microsecond)
	if atomic.AddInt64(&counter, 1)%100 == 0 {
		atomic.AddInt64(&sleeps, 1)
		waitForDisk()
	}
	d := time.Since(t0)
	if d >= 2*time.Millisecond {
		atomic.AddInt64(&over, 1)
	} else if d >= 1500*time.Microsecond {
		atomic.AddInt64(&near, 1)
	}
	return n
}

//go:noinline
func serve(calls int) int {
	s := 0
	for i := 0; i < calls; i++ {
		s += handle()
	}
	return s
}

func main() {
	n, err := strconv.Atoi(os.Args[len(os.Args)-1])
	if len(os.Args) != 2 || err != nil || n < 4 {
		fmt.Fprintln(os.Stderr, "usage: goslow N (calls of handle, at least 4)")
		os.Exit(2)
	}
	var wg sync.WaitGroup
	var sum int64
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			atomic.AddInt64(&sum, int64(serve(n/4)))
		}()
	}
	wg.Wait()
	fmt.Fprintf(os.Stderr, "truth slow calls=%d sleeps=%d over=%d near=%d\n", 4*(n/4), sleeps, over, near)
	fmt.Println("goslow done", sum != 0)
}
