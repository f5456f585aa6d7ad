package filesnap

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncFS flushes the file system holding dir (syncfs(2)): one call makes
// every blob a Take wrote durable, where an fsync per blob cost the first
// Take of a large project one disk flush per file.
func syncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}
