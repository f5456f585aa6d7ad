//go:build !linux

package filesnap

import "os/exec"

// syncFS flushes the file systems (sync(2) through the sync command where
// syncfs(2) is not available).
func syncFS(dir string) error { return exec.Command("sync").Run() }
