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

// lstat reports whether path exists, without following a final symlink. Unlike os.Lstat
// it builds no FileInfo: Project asks this once per ancestor at every boundary.
func lstat(path string) error {
	var st unix.Stat_t
	for {
		err := unix.Lstat(path, &st)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: "lstat", Path: path, Err: err}
		}
		return nil
	}
}
