// A Go program: goroutines, and recursion that makes the runtime grow (copy) stacks.
// A uretprobe breaks it (the runtime finds the trampoline as a return address); ret probes do not.
// Usage: gotarget N
package main

import (
	"fmt"
	"os"
	"strconv"
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

func main() {
	n, _ := strconv.Atoi(os.Args[1])
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
