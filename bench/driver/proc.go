package driver

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, 100 on every Linux ABI Go supports.
const clockTicks = 100

// procCPU returns the user+system CPU time pid has used (its own threads,
// not reaped children: tool processes are the same work for every system).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read cpu of pid %d: %w", pid, err)
	}
	// The command name may contain spaces: fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("pid %d: malformed /proc stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// After ')': state(0) ... utime is field 14 overall, index 11 here.
	if len(f) < 13 {
		return 0, fmt.Errorf("pid %d: short /proc stat", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("pid %d: bad utime/stime %q %q", pid, f[11], f[12])
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// procMem returns the resident set size now and its peak (VmRSS, VmHWM).
func procMem(pid int) (rss, peak int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("read memory of pid %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("pid %d: %s %q: %w", pid, k, v, err)
		}
		if k == "VmRSS" {
			rss = n << 10
		} else {
			peak = n << 10
		}
	}
	return rss, peak, nil
}
