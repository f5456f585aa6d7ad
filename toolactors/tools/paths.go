package tools

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrOutsideLocation is wrapped by every refusal of a path outside the Location.
var ErrOutsideLocation = errors.New("path outside the Location")

// PathError names the refused path and the rule it broke.
type PathError struct {
	Path string
	Rule string
}

func (e *PathError) Error() string { return fmt.Sprintf("path %q refused: %s", e.Path, e.Rule) }

func (e *PathError) Unwrap() error { return ErrOutsideLocation }

// Resolve maps a path given by the model to an absolute path inside root (absolute,
// symlinks resolved). It refuses absolute paths, paths that climb out with "..", and
// paths that resolve through a symlink to outside root. The target itself need not
// exist (apply_patch adds files): the deepest existing ancestor is resolved and the
// rest appended.
func Resolve(root, p string) (string, error) {
	if p == "" {
		p = "."
	}
	if filepath.IsAbs(p) {
		return "", &PathError{p, "absolute paths are not allowed; give a path relative to the Location"}
	}
	clean := filepath.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", &PathError{p, "it escapes the Location with .."}
	}
	return contain(root, filepath.Join(root, clean), p)
}

// contain is the path authority every file tool shares (Resolve for the model's
// paths, walkFiles for each file a search visits): abs's real path, when it lies
// inside root; a PathError naming shown otherwise.
func contain(root, abs, shown string) (string, error) {
	real, err := realPath(abs)
	if err != nil {
		return "", fmt.Errorf("resolve %q: %w", shown, err)
	}
	if !within(root, real) {
		return "", &PathError{shown, fmt.Sprintf("a symlink leads outside the Location to %s", real)}
	}
	return real, nil
}

// maxLinks bounds the dangling symlinks realPath follows by hand (the kernel's
// own limit is 40).
const maxLinks = 40

// realPath resolves the symlinks of abs's deepest existing ancestor. A dangling
// symlink on the way is followed to where it points (a file created through it
// would land there), so a link towards a missing outside file resolves outside.
func realPath(abs string) (string, error) {
	for hops := 0; ; hops++ {
		rest := ""
		cur := abs
		for {
			real, err := filepath.EvalSymlinks(cur)
			if err == nil {
				return filepath.Join(real, rest), nil
			}
			if !errors.Is(err, os.ErrNotExist) {
				return "", err
			}
			if target, lerr := os.Readlink(cur); lerr == nil {
				if hops == maxLinks {
					return "", fmt.Errorf("%s: too many levels of symbolic links", abs)
				}
				if !filepath.IsAbs(target) {
					target = filepath.Join(filepath.Dir(cur), target)
				}
				abs = filepath.Join(target, rest)
				break // resolve the link's target from the top
			}
			parent := filepath.Dir(cur)
			if parent == cur {
				return abs, nil
			}
			rest = filepath.Join(filepath.Base(cur), rest)
			cur = parent
		}
	}
}

func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator))
}

// Rel is p relative to root with forward slashes, for model-visible text.
func Rel(root, p string) string {
	r, err := filepath.Rel(root, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(r)
}
