package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// The environment variables Load reads (besides HOME and XDG_CONFIG_HOME).
const (
	// EnvConfig names one more configuration file, read after the project's.
	EnvConfig = "OPENCODE_CONFIG"
	// EnvDisableProject turns off the project's files (walking up from the
	// Location) when set to anything but "", "0", "false", "no" or "off".
	EnvDisableProject = "OPENCODE_DISABLE_PROJECT_CONFIG"
)

// FileNames are the configuration file names looked for in each folder, in
// the order they are read (a later one overrides an earlier one).
var FileNames = []string{"opencode.json", "opencode.jsonc"}

// Options configures a Loader. Zero fields take the documented defaults.
type Options struct {
	// Getenv reads HOME, XDG_CONFIG_HOME, OPENCODE_CONFIG,
	// OPENCODE_DISABLE_PROJECT_CONFIG and the {env:VAR} substitutions.
	// Default os.Getenv.
	Getenv func(string) string
	// File is read last of all (`sessionrt serve --config FILE`).
	File string
}

// Config is the configuration of one Location as its files say now.
type Config struct {
	// Dir is the Location; Root the project root that bounds the walk up
	// (the nearest folder holding .git, else Dir).
	Dir, Root string
	// Files are the files read, in merge order.
	Files []string
	// Tree is the merged configuration with where each value was written.
	Tree *Value
	// Info is Tree decoded.
	Info Info
	// Folders are the configuration folders, in merge order: the global
	// one, then each .opencode folder from the root down to Dir. They hold
	// command/*.md files and skill/*/SKILL.md skills.
	Folders []string
	// Commands are the configured commands, by name.
	Commands map[string]Command
	// Home is the user's home folder ("~/" in paths).
	Home string

	stamps []stamp
}

// GlobalDir is the global configuration folder: $XDG_CONFIG_HOME/opencode,
// else $HOME/.config/opencode ("" with neither).
func GlobalDir(getenv func(string) string) string {
	if x := getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "opencode")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "opencode")
	}
	return ""
}

// ProjectRoot is the nearest folder from dir up holding .git, else dir.
func ProjectRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

func disabled(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "0", "false", "no", "off":
		return false
	}
	return true
}

// Loader loads the configuration of Locations and keeps the last result of
// each: Load reads the files again only when one of them (or one they
// reference, or a folder's listing) changed. It is safe for concurrent use.
type Loader struct {
	opts  Options
	mu    sync.Mutex
	cache map[string]*cached
}

type cached struct {
	cfg *Config
	err error
	// stamps are the files and folders the result depends on, as seen
	// when it was loaded (a missing file is a stamp too: its creation is
	// a change).
	stamps []stamp
}

type stamp struct {
	path   string
	exists bool
	dir    bool
	mtime  time.Time
	size   int64
}

func stat(path string) stamp {
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{path: path}
	}
	return stamp{path: path, exists: true, dir: fi.IsDir(), mtime: fi.ModTime(), size: fi.Size()}
}

// NewLoader returns a Loader.
func NewLoader(opts Options) *Loader {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	return &Loader{opts: opts, cache: map[string]*cached{}}
}

// Getenv is the Loader's environment.
func (l *Loader) Getenv(k string) string { return l.opts.Getenv(k) }

// Load returns the configuration of the Location dir. A file that cannot
// be used is a *FileError naming it (with line and column when it has
// them); it concerns this Location only.
func (l *Loader) Load(dir string) (*Config, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	dir = filepath.Clean(dir)
	l.mu.Lock()
	c := l.cache[dir]
	l.mu.Unlock()
	if c != nil && !changed(c.stamps) {
		return c.cfg, c.err
	}
	cfg, stamps, err := l.load(dir)
	l.mu.Lock()
	l.cache[dir] = &cached{cfg: cfg, err: err, stamps: stamps}
	l.mu.Unlock()
	return cfg, err
}

func changed(stamps []stamp) bool {
	for _, s := range stamps {
		if stat(s.path) != s {
			return true
		}
	}
	return false
}

// sources lists the candidate files in merge order and the configuration
// folders.
func (l *Loader) sources(dir, root string) (files, folders []string) {
	getenv := l.opts.Getenv
	if g := GlobalDir(getenv); g != "" {
		files = append(files, filepath.Join(g, "config.json"))
		for _, n := range FileNames {
			files = append(files, filepath.Join(g, n))
		}
		folders = append(folders, g)
	}
	if !disabled(getenv(EnvDisableProject)) {
		var levels []string // root first
		for d := dir; ; d = filepath.Dir(d) {
			levels = append(levels, d)
			if d == root || filepath.Dir(d) == d {
				break
			}
		}
		slices.Reverse(levels)
		for _, d := range levels {
			for _, n := range FileNames {
				files = append(files, filepath.Join(d, n))
			}
		}
		for _, d := range levels {
			oc := filepath.Join(d, ".opencode")
			for _, n := range FileNames {
				files = append(files, filepath.Join(oc, n))
			}
			folders = append(folders, oc)
		}
	}
	if f := getenv(EnvConfig); f != "" {
		files = append(files, f)
	}
	if l.opts.File != "" {
		files = append(files, l.opts.File)
	}
	return files, folders
}

func (l *Loader) load(dir string) (*Config, []stamp, error) {
	root := ProjectRoot(dir)
	files, folders := l.sources(dir, root)
	cfg := &Config{Dir: dir, Root: root, Home: l.opts.Getenv("HOME")}
	var stamps []stamp
	home := l.opts.Getenv("HOME")
	var merged *Value
	for _, f := range files {
		st := stat(f)
		stamps = append(stamps, st)
		if !st.exists || st.dir {
			continue
		}
		text, err := os.ReadFile(f)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, stamps, &FileError{Path: f, Msg: err.Error()}
		}
		text, refs, err := substitute(text, f, l.opts.Getenv, home)
		for _, r := range refs {
			stamps = append(stamps, stat(r))
		}
		if err != nil {
			return nil, stamps, err
		}
		tree, err := Parse(f, text)
		if err != nil {
			return nil, stamps, err
		}
		if _, err := decodeInfo(tree); err != nil {
			return nil, stamps, err
		}
		cfg.Files = append(cfg.Files, f)
		merged = Merge(merged, tree)
	}
	if merged == nil {
		merged = &Value{Kind: Object, Pos: Pos{File: "(defaults)"}}
	}
	info, err := decodeInfo(merged)
	if err != nil {
		return nil, stamps, err
	}
	cfg.Tree, cfg.Info = merged, info
	for _, f := range folders {
		st := stat(f)
		stamps = append(stamps, st)
		if st.exists && st.dir {
			cfg.Folders = append(cfg.Folders, f)
		}
	}
	cmds, cmdStamps, err := loadCommands(cfg)
	stamps = append(stamps, cmdStamps...)
	if err != nil {
		return nil, stamps, err
	}
	cfg.Commands = cmds
	cfg.stamps = stamps
	return cfg, stamps, nil
}
