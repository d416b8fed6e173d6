// A Go program: goroutines that park inside calls, and recursion that makes the runtime grow (copy)
// stacks under open calls. It measures its own truth ("truth KEY field=value" on stderr).
// A uretprobe breaks it (the runtime finds the trampoline as a return address); ret probes do not.
// Usage:
//
//	gotarget N                 4 goroutines x N calls of hot(), recursing up to 199 deep
//	gotarget park G CALLS      G goroutines x CALLS calls of work(): spin 20 us, sleep 100 us, spin 20 us
//	gotarget deep G ROUNDS     G goroutines x ROUNDS recursions of rec(), 50..199 deep, on fresh stacks
//	gotarget grow G ROUNDS     the same, 20..59 deep: fewer frames than fnprof keeps, stacks still grow
//	gotarget goexit G          G goroutines end inside quit() (runtime.Goexit), then G calls of work()
//	gotarget many G            G goroutines inside hold() at once
//	gotarget panic CALLS       CALLS calls of safe(), which recovers from a panic in boom()
//	gotarget spin SECONDS      burns CPU in spin() for the sampling test
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

//go:noinline
func grow(depth int) int {
	var pad [256]byte // forces stack growth (and stack copying) on deep recursion
	pad[depth%256] = byte(depth)
	if depth == 0 {
		return int(pad[0])
	}
	return grow(depth-1) + int(pad[depth%256]&1)
}

//go:noinline
func hot(i int) int {
	return grow(i%200) + i
}

func legacy(n int) {
	sum := 0
	done := make(chan int)
	for g := 0; g < 4; g++ {
		go func(g int) {
			s := 0
			for i := 0; i < n; i++ {
				s += hot(i + g)
			}
			done <- s
		}(g)
	}
	for g := 0; g < 4; g++ {
		sum += <-done
	}
	fmt.Println("sum", sum)
}

//go:noinline
func spinFor(d time.Duration) int {
	n := 0
	for t0 := time.Now(); time.Since(t0) < d; n++ {
	}
	return n
}

// work parks its goroutine mid-call: it often resumes on another OS thread.
//
// It times itself from its first line to its return: the call's own time, without the probes'
// traps around it, which the caller's clock would include.
//
//go:noinline
func work() int {
	t0 := time.Now()
	n := spinFor(20 * time.Microsecond)
	time.Sleep(100 * time.Microsecond)
	n += spinFor(20 * time.Microsecond)
	atomic.AddInt64(&workNs, int64(time.Since(t0)))
	return n
}

var workNs, outerNs int64

func park(goroutines, calls int) {
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < calls; i++ {
				t0 := time.Now()
				work()
				atomic.AddInt64(&outerNs, int64(time.Since(t0)))
			}
		}()
	}
	wg.Wait()
	n := goroutines * calls
	// outer_avg_ns: the caller's clock, the probes' traps around the call included.
	fmt.Fprintf(os.Stderr, "truth park calls=%d avg_ns=%.0f outer_avg_ns=%.0f\n", n, float64(workNs)/float64(n),
		float64(outerNs)/float64(n))
	fmt.Println("park done", n)
}

var entries, recNs int64

// rec times itself, first line to return, as work() does.
//
//go:noinline
func rec(depth int) int {
	t0 := time.Now()
	var pad [512]byte // 0.5 KiB a frame: a fresh 8 KiB stack is copied several times on the way down
	atomic.AddInt64(&entries, 1)
	pad[depth%512] = byte(depth)
	r := int(pad[0])
	if depth > 0 {
		r = rec(depth-1) + int(pad[depth%512]&1)
	}
	atomic.AddInt64(&recNs, int64(time.Since(t0)))
	return r
}

// deep: rec() from G x ROUNDS fresh goroutines, 50..199 deep (past the 64 frames kept);
// with maxDepth 60 (grow), 20..59 deep: every frame kept, the stack still copied under them.
func deep(goroutines, rounds, minDepth, spread int) {
	var wg sync.WaitGroup
	sums := make([]int, goroutines*rounds)
	var total int64
	for g := 0; g < goroutines; g++ {
		for r := 0; r < rounds; r++ {
			wg.Add(1)
			// A goroutine per recursion: each starts on a small stack, grown under the open calls.
			go func(g, r int) {
				defer wg.Done()
				t0 := time.Now()
				s := rec(minDepth + (r*37+g*11)%spread)
				atomic.AddInt64(&total, int64(time.Since(t0)))
				sums[g*rounds+r] = s
			}(g, r)
		}
		wg.Wait()
	}
	sum := 0
	for _, s := range sums {
		sum += s
	}
	fmt.Fprintf(os.Stderr, "truth deep entries=%d rec_avg_ns=%.0f outer=%d outer_avg_ns=%.0f\n", entries,
		float64(recNs)/float64(entries), goroutines*rounds, float64(total)/float64(goroutines*rounds))
	fmt.Println("deep sum", sum)
}

// quit ends its goroutine inside the call: the call never returns.
//
//go:noinline
func quit() {
	runtime.Goexit()
}

// goexit: G goroutines end inside quit(); then work() runs G times on the main goroutine.
func goexit(goroutines int) {
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			quit()
		}()
	}
	wg.Wait()
	for g := 0; g < goroutines; g++ {
		work()
	}
	fmt.Fprintf(os.Stderr, "truth goexit quit=%d work=%d\n", goroutines, goroutines)
	fmt.Println("goexit done")
}

// boom panics inside the call: it never returns; safe recovers and returns normally.
//
//go:noinline
func boom(i int) int {
	if i >= 0 {
		panic("boom")
	}
	return i
}

//go:noinline
func safe(i int) (r int) {
	defer func() {
		if recover() != nil {
			r = -1
		}
	}()
	return boom(i)
}

// panics: CALLS calls of safe(), each recovering from a panic in boom().
func panics(calls int) {
	sum := 0
	for i := 0; i < calls; i++ {
		sum += safe(i)
	}
	fmt.Fprintf(os.Stderr, "truth panic safe=%d boom=%d\n", calls, calls)
	fmt.Println("panic sum", sum)
}

// hold blocks until the channel closes: every goroutine is inside it at once.
//
//go:noinline
func hold(c chan struct{}) {
	<-c
}

// many: G goroutines inside hold() at once, then all return.
func many(goroutines int) {
	var in, out sync.WaitGroup
	c := make(chan struct{})
	for g := 0; g < goroutines; g++ {
		in.Add(1)
		out.Add(1)
		go func() {
			defer out.Done()
			in.Done()
			hold(c)
		}()
	}
	in.Wait()
	time.Sleep(50 * time.Millisecond) // the last ones reach their receive
	close(c)
	out.Wait()
	fmt.Fprintf(os.Stderr, "truth many calls=%d\n", goroutines)
	fmt.Println("many done")
}

//go:noinline
func spin(d time.Duration) int {
	return spinFor(d)
}

func main() {
	arg := func(i int) int {
		n, err := strconv.Atoi(os.Args[i])
		if err != nil {
			fmt.Fprintln(os.Stderr, "usage: gotarget N | park G CALLS | deep|grow G ROUNDS | goexit G | many G | panic CALLS | spin SECONDS")
			os.Exit(2)
		}
		return n
	}
	switch os.Args[1] {
	case "park":
		park(arg(2), arg(3))
	case "deep":
		deep(arg(2), arg(3), 50, 150)
	case "grow":
		deep(arg(2), arg(3), 20, 40)
	case "many":
		many(arg(2))
	case "panic":
		panics(arg(2))
	case "goexit":
		goexit(arg(2))
	case "spin":
		spin(time.Duration(arg(2)) * time.Second)
	default:
		legacy(arg(1))
	}
}
