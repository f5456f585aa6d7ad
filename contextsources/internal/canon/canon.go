package canon

import (
	"errors"
	"io/fs"
	"path/filepath"
)

// evalDir is the portable route: resolve every symlink, then make the result absolute.
func evalDir(path string) (string, error) {
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	return filepath.Abs(p)
}

// Project canonicalizes dir and finds its project root: the nearest ancestor (dir
// included) holding ".git", else dir itself; git says whether one was found.
func Project(dir string) (cdir, root string, git bool, err error) {
	cdir, err = Dir(dir)
	if err != nil {
		return "", "", false, err
	}
	for d := cdir; ; {
		err := lstat(filepath.Join(d, ".git"))
		if err == nil {
			return cdir, d, true, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", "", false, err
		}
		parent := filepath.Dir(d)
		if parent == d {
			return cdir, cdir, false, nil
		}
		d = parent
	}
}
