//go:build wasip1

package main

import (
	"runtime"
	"runtime/metrics"
	"time"
)

// spike holds the memory of the "spike" probe until "drop".
var spike [][]byte

// runtimeProbe runs the x-test modes that show when the Go runtime calls poll_oneoff
// (docs/filter.md, "Which Envoy releases can run the module"):
//
//   - "timer-gc": a pending timer starts the runtime's poller (runtime.(*timers).addHeap →
//     netpollGenericInit); from then on every stop-the-world of a collection ends with a
//     non-blocking poll (startTheWorldWithSema → netpoll(0) → poll_oneoff with a zero clock
//     timeout), whatever the timing. A sleep, by contrast, polls only if its time is not yet up
//     when the scheduler looks.
//   - "spike" keeps 16 MiB live; "drop" lets it go; "churn" makes 2 MiB of short-lived garbage.
//     None of them blocks, so the background scavenger, which would return the freed memory
//     and arm a timer to pace itself, never gets to run.
//   - "yield" calls runtime.Gosched: the scavenger, runnable since the last collection began,
//     runs, returns the freed memory, arms its timer, and the poller exists from then on.
//   - "runtime-metrics" logs the runtime's counters: collections, background scavenger CPU
//     time, free heap, heap goal, and goroutines waiting to run.
func runtimeProbe(mode string) {
	switch mode {
	case "timer-gc":
		t := time.AfterFunc(time.Hour, func() {})
		runtime.GC()
		t.Stop()
		logf(2, "collected")
	case "spike":
		for range 256 {
			spike = append(spike, make([]byte, 64<<10))
		}
	case "drop":
		spike = nil
	case "yield":
		runtime.Gosched()
	case "churn":
		var keep []byte
		for range 512 {
			keep = make([]byte, 4<<10)
		}
		logf(2, "churned "+itoa(int64(len(keep))))
	case "runtime-metrics":
		ms := []metrics.Sample{
			{Name: "/gc/cycles/total:gc-cycles"},
			{Name: "/cpu/classes/scavenge/background:cpu-seconds"},
			{Name: "/memory/classes/heap/free:bytes"},
			{Name: "/gc/heap/goal:bytes"},
			{Name: "/sched/goroutines/runnable:goroutines"},
		}
		metrics.Read(ms)
		logf(2, "metrics gc="+itoa(int64(ms[0].Value.Uint64()))+
			" scavenger_ns="+itoa(int64(ms[1].Value.Float64()*1e9))+
			" free="+itoa(int64(ms[2].Value.Uint64()))+
			" goal="+itoa(int64(ms[3].Value.Uint64()))+
			" runnable="+itoa(int64(ms[4].Value.Uint64())))
	}
}
