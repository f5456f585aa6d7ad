//go:build linux

package canon

import (
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Dir returns the canonical absolute path of the existing directory path: the kernel's
// own name for it, read back through /proc/self/fd. It falls back to EvalSymlinks when
// /proc is not mounted.
func Dir(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	var fd int
	for {
		fd, err = unix.Open(abs, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return "", &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var buf [4096]byte
	n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), buf[:])
	if err != nil || n == len(buf) {
		return evalDir(abs)
	}
	p := string(buf[:n])
	if !filepath.IsAbs(p) || strings.HasSuffix(p, " (deleted)") {
		return evalDir(abs)
	}
	return p, nil
}
