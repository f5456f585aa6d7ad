package instructions

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sessionrt/sessionrt/contextsources"
	"github.com/sessionrt/sessionrt/contextsources/internal/canon"
)

// Key is the aggregate instruction source key.
const Key = "instructions/agents"

// FileName is the instruction file looked for.
const FileName = "AGENTS.md"

// DefaultMaxFileBytes bounds one instruction file; longer files are cut with a marker.
const DefaultMaxFileBytes = 256 << 10

// The scopes of a File.
const (
	ScopeGlobal  = "global"
	ScopeProject = "project"
)

// The variables that turn off project discovery when set to anything but "", "0",
// "false", "no" or "off".
const (
	DisableVar          = "OPENCODE_DISABLE_PROJECT_CONFIG"
	DisableVarSessionrt = "SESSIONRT_DISABLE_PROJECT_CONFIG"
)

// File is one loaded instruction file.
type File struct {
	Path    string `json:"path"`
	Scope   string `json:"scope"`
	Content string `json:"content"`
}

// Aggregate is the ordered set of effective instruction files.
type Aggregate struct {
	Files []File `json:"files"`
}

// Config says where to look.
type Config struct {
	// Directory is the Location's working directory. Required.
	Directory string
	// ProjectRoot bounds the upward walk. Default: discovered at each observation as the
	// nearest ancestor of Directory (itself included) holding ".git", else Directory.
	ProjectRoot string
	// GlobalDir holds the global AGENTS.md. Default: the first of GlobalDirs that has
	// one (see there); set, it is the only folder looked at.
	GlobalDir string
	// Getenv reads the environment (XDG_CONFIG_HOME, HOME, the disable variables).
	// Default: os.Getenv.
	Getenv func(string) string
	// MaxFileBytes bounds each file. Default: DefaultMaxFileBytes.
	MaxFileBytes int64
}

func (c Config) withDefaults() (Config, error) {
	if c.Directory == "" {
		return c, errors.New("instructions source: Directory is required")
	}
	if c.Getenv == nil {
		c.Getenv = os.Getenv
	}
	if c.MaxFileBytes <= 0 {
		c.MaxFileBytes = DefaultMaxFileBytes
	}
	return c, nil
}

// GlobalDirs lists the folders whose AGENTS.md is the global file, the winner first:
// sessionrt's own ($XDG_CONFIG_HOME/sessionrt, else $HOME/.config/sessionrt), a
// deliberate override for sessionrt, then OpenCode's global folder
// ($XDG_CONFIG_HOME/opencode, else $HOME/.config/opencode), so that an existing
// OpenCode global file applies as it does in OpenCode. Only the first folder holding
// an AGENTS.md counts (OpenCode reads one global file too); with neither variable set
// there is none.
func GlobalDirs(getenv func(string) string) []string {
	base := getenv("XDG_CONFIG_HOME")
	if base == "" {
		h := getenv("HOME")
		if h == "" {
			return nil
		}
		base = filepath.Join(h, ".config")
	}
	return []string{filepath.Join(base, "sessionrt"), filepath.Join(base, "opencode")}
}

// ProjectDiscoveryDisabled reports whether a disable variable is set.
func ProjectDiscoveryDisabled(getenv func(string) string) bool {
	for _, k := range [...]string{DisableVar, DisableVarSessionrt} {
		switch strings.ToLower(strings.TrimSpace(getenv(k))) {
		case "", "0", "false", "no", "off":
		default:
			return true
		}
	}
	return false
}

// Load observes the aggregate once: Present with the files, Absent when there are none,
// Unavailable when an existing file cannot be read.
func Load(ctx context.Context, cfg Config) contextsources.Result[Aggregate] {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return contextsources.Unavailable[Aggregate](err)
	}
	var files []File
	seen := make(map[string]bool)
	globals := GlobalDirs(cfg.Getenv)
	if cfg.GlobalDir != "" {
		globals = []string{cfg.GlobalDir}
	}
	for _, dir := range globals {
		f, ok, err := readGlobal(dir, cfg.MaxFileBytes)
		if err != nil {
			return contextsources.Unavailable[Aggregate](err)
		}
		if ok {
			files = append(files, f)
			seen[f.Path] = true
			break // one global file: the first folder that has one wins
		}
	}
	if !ProjectDiscoveryDisabled(cfg.Getenv) {
		project, err := walkProject(ctx, cfg, seen)
		if err != nil {
			return contextsources.Unavailable[Aggregate](err)
		}
		files = append(files, project...)
	}
	if len(files) == 0 {
		return contextsources.Absent[Aggregate]()
	}
	return contextsources.Present(Aggregate{Files: files})
}

// readGlobal follows symlinks freely: the global file is the user's own configuration.
func readGlobal(dir string, limit int64) (File, bool, error) {
	cdir, err := canon.Dir(dir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return File{}, false, nil
	}
	if err != nil {
		return File{}, false, fmt.Errorf("global instructions: %w", err)
	}
	path := filepath.Join(cdir, FileName)
	content, ok, err := readRegular(path, limit, true)
	if errors.Is(err, errSymlink) {
		if path, err = filepath.EvalSymlinks(path); errors.Is(err, fs.ErrNotExist) {
			return File{}, false, nil
		} else if err != nil {
			return File{}, false, fmt.Errorf("global instructions: %w", err)
		}
		content, ok, err = readRegular(path, limit, false)
	}
	if err != nil || !ok {
		return File{}, false, err
	}
	return File{Path: path, Scope: ScopeGlobal, Content: content}, true, nil
}

// walkProject collects AGENTS.md from the canonical directory up to the canonical root,
// nearest first. A directory outside the root is not searched.
func walkProject(ctx context.Context, cfg Config, seen map[string]bool) ([]File, error) {
	var dir, root string
	var err error
	if cfg.ProjectRoot == "" {
		if dir, root, _, err = canon.ProjectAt(ctx, cfg.Directory); err != nil {
			return nil, fmt.Errorf("project instructions: %w", err)
		}
	} else {
		if dir, err = canon.Dir(cfg.Directory); err != nil {
			return nil, fmt.Errorf("project instructions: directory: %w", err)
		}
		if root, err = canon.Dir(cfg.ProjectRoot); err != nil {
			return nil, fmt.Errorf("project instructions: project root: %w", err)
		}
	}
	if !within(root, dir) {
		return nil, nil
	}
	var files []File
	for d := dir; ; d = filepath.Dir(d) {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("project instructions: %w", err)
		}
		f, ok, err := readProjectFile(filepath.Join(d, FileName), root, cfg.MaxFileBytes)
		if err != nil {
			return nil, err
		}
		if ok && !seen[f.Path] {
			seen[f.Path] = true
			files = append(files, f)
		}
		if d == root || filepath.Dir(d) == d {
			return files, nil
		}
	}
}

// readProjectFile reads one candidate; a symlink is followed only to a target inside root.
// The common cases cost one open: O_NOFOLLOW refuses a symlink (ELOOP), which is then
// resolved and contained explicitly.
func readProjectFile(path, root string, limit int64) (File, bool, error) {
	content, ok, err := readRegular(path, limit, true)
	if err == nil {
		if !ok {
			return File{}, false, nil
		}
		return File{Path: path, Scope: ScopeProject, Content: content}, true, nil
	}
	if !errors.Is(err, errSymlink) {
		return File{}, false, err
	}
	target, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		return File{}, false, nil // dangling: there is no file
	}
	if err != nil {
		return File{}, false, fmt.Errorf("project instructions %s: %w", path, err)
	}
	if !within(root, target) {
		return File{}, false, nil // never leave the project root
	}
	content, ok, err = readRegular(target, limit, false)
	if err != nil || !ok {
		return File{}, false, err
	}
	return File{Path: target, Scope: ScopeProject, Content: content}, true, nil
}

// errSymlink: readRegular was asked not to follow and path is a symlink.
var errSymlink = errors.New("is a symlink")

// readRegular reads a regular file up to limit bytes; anything else (a directory, a FIFO)
// is not an instruction file. An error reading an existing file is returned
// (→ Unavailable); with noFollow a symlink yields errSymlink.
func readRegular(path string, limit int64, noFollow bool) (string, bool, error) {
	buf, ok, err := readLimited(path, limit, noFollow)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		if errors.Is(err, errSymlink) {
			return "", false, err
		}
		return "", false, fmt.Errorf("read instructions: %w", err)
	}
	if !ok {
		return "", false, nil
	}
	if int64(len(buf)) > limit {
		return strings.ToValidUTF8(string(buf[:limit]), "") +
			fmt.Sprintf("\n[truncated: %s is longer than %d bytes]", path, limit), true, nil
	}
	return string(buf), true, nil
}

// within reports whether p is root or below it (both canonical and absolute).
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// Render renders the aggregate as it appears in a baseline.
func Render(a Aggregate) string {
	parts := make([]string, len(a.Files))
	for i, f := range a.Files {
		parts[i] = "Instructions from: " + f.Path + "\n" + f.Content
	}
	return strings.Join(parts, "\n\n")
}

// RenderUpdate restates the complete current set and says it supersedes the prior one.
func RenderUpdate(a Aggregate) string {
	return "The ambient AGENTS.md instructions have changed. The complete current set below " +
		"supersedes all previously loaded instructions; earlier instructions not repeated here no longer apply.\n\n" +
		Render(a)
}

// Revocation is the text emitted when no ambient instructions remain.
const Revocation = "All previously loaded AGENTS.md instructions no longer apply; no ambient instructions are in effect now."

// Source is the aggregate instruction Context Source for cfg.
func Source(cfg Config) (contextsources.Source, error) {
	if _, err := cfg.withDefaults(); err != nil {
		return contextsources.Source{}, err
	}
	return contextsources.Make(contextsources.Spec[Aggregate]{
		Key:      Key,
		Load:     func(ctx context.Context) contextsources.Result[Aggregate] { return Load(ctx, cfg) },
		Baseline: Render,
		Update:   RenderUpdate,
		Removal:  func(Aggregate) string { return Revocation },
	})
}

// Context is the aggregate instruction source of the Location at dir with every default
// (global file from the environment, project root discovered at each boundary).
func Context(dir string) (contextsources.SystemContext, error) {
	src, err := Source(Config{Directory: dir})
	if err != nil {
		return contextsources.SystemContext{}, err
	}
	return contextsources.New(src)
}
