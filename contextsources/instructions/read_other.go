//go:build !unix

package instructions

import (
	"io"
	"io/fs"
	"os"
)

// readLimited is the portable version of read_unix.go: Lstat stands in for O_NOFOLLOW.
func readLimited(path string, limit int64, noFollow bool) ([]byte, bool, error) {
	if noFollow {
		if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, false, errSymlink
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	if !fi.Mode().IsRegular() {
		return nil, false, nil
	}
	buf, err := io.ReadAll(io.LimitReader(f, limit+1))
	return buf, err == nil, err
}
