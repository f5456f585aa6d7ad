//go:build !linux

package canon

import "os"

// Dir returns the canonical absolute path of the existing directory path.
func Dir(path string) (string, error) { return evalDir(path) }

// lstat reports whether path exists, without following a final symlink.
func lstat(path string) error {
	_, err := os.Lstat(path)
	return err
}
