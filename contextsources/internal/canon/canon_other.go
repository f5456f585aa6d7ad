//go:build !linux

package canon

// Dir returns the canonical absolute path of the existing directory path.
func Dir(path string) (string, error) { return evalDir(path) }
