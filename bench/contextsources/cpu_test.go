package contextsources

import (
	"syscall"
	"testing"
	"time"
)

// cpuClock reports the process's user+system CPU time per operation as "cpu-ns/op"
// next to ns/op: on a shared 2-core machine wall time mostly measures the neighbours'
// load, CPU time measures what a boundary costs. Call the returned func after the loop.
func cpuClock(b *testing.B) func() {
	start := cpuNow(b)
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(cpuNow(b)-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

func cpuNow(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
