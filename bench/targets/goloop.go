// A Go loop for bench/sites.py: parse() calls strconv.ParseFloat; "rate CALLS_PER_S" each second
// until SIGTERM/SIGINT. Prints "ready" first.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

//go:noinline
func parse(s string) float64 {
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	fmt.Println("ready")
	t0, calls, sum := time.Now(), 0, 0.0
	for {
		select {
		case <-stop:
			fmt.Println("sum positive:", sum > 0)
			return
		default:
		}
		for i := 0; i < 100; i++ {
			sum += parse("3.14159")
			calls++
		}
		if d := time.Since(t0); d >= time.Second {
			fmt.Printf("rate %.0f\n", float64(calls)/d.Seconds())
			t0, calls = time.Now(), 0
		}
	}
}
