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

// watchdogName is the name (comm) of sessionrt's tool watchdog (package
// toolactors/proc/reaper), a long-lived child of the server.
const watchdogName = "srt-watchdog"

// serverCPU is procCPU of pid plus its tool watchdog's own CPU: both are the
// server's work (the commands the watchdog runs and reaps are not counted, as
// for any system). Other children are not counted.
func serverCPU(pid int) (time.Duration, error) {
	total, err := procCPU(pid)
	if err != nil {
		return 0, err
	}
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		for _, f := range strings.Fields(string(b)) {
			c, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", c)); strings.TrimSpace(string(comm)) != watchdogName {
				continue
			}
			if cpu, err := procCPU(c); err == nil {
				total += cpu
			}
		}
	}
	return total, nil
}

// memory is a process's resident set from /proc/PID/status.
type memory struct {
	rss, peak int64 // VmRSS, VmHWM
	file      int64 // RssFile: mapped file pages (an mmap'd journal) count in RSS
	exe       int64 // of file, the pages of the executable's own mappings
}

// procMem reads pid's resident set size now, its peak and the part of it
// that is file-backed.
func procMem(pid int) (memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, fmt.Errorf("read memory of pid %d: %w", pid, err)
	}
	m, err := parseStatus(pid, b)
	if err != nil {
		return m, err
	}
	// The executable's share is read apart: a larger binary maps more of
	// itself (code, tables, pclntab), which a heap change does not explain.
	// It is only a breakdown, so a process whose mappings cannot be read
	// reports 0 rather than failing the run.
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return m, nil
	}
	sm, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return m, nil
	}
	m.exe, _ = mappedRSS(sm, exe)
	return m, nil
}

// mappedRSS sums the Rss of the mappings of path in a /proc/PID/smaps text.
func mappedRSS(smaps []byte, path string) (int64, error) {
	var sum int64
	in := false
	for _, line := range strings.Split(string(smaps), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		// A mapping's header starts with its address range ("lo-hi"); the
		// fields after it are "Key: value kB".
		if !strings.HasSuffix(f[0], ":") {
			in = len(f) >= 6 && strings.Join(f[5:], " ") == path
			continue
		}
		if !in || f[0] != "Rss:" || len(f) < 2 {
			continue
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("smaps Rss %q: %w", line, err)
		}
		sum += n << 10
	}
	return sum, nil
}

func parseStatus(pid int, b []byte) (memory, error) {
	var m memory
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		var dst *int64
		switch k {
		case "VmRSS":
			dst = &m.rss
		case "VmHWM":
			dst = &m.peak
		case "RssFile":
			dst = &m.file
		}
		if !ok || dst == nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return memory{}, fmt.Errorf("pid %d: %s %q: %w", pid, k, v, err)
		}
		*dst = n << 10
	}
	return m, nil
}
