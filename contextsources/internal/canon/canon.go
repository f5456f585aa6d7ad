package canon

import "path/filepath"

// evalDir is the portable route: resolve every symlink, then make the result absolute.
func evalDir(path string) (string, error) {
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	return filepath.Abs(p)
}
