package environment

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/sessionrt/sessionrt/contextsources"
	"github.com/sessionrt/sessionrt/contextsources/internal/canon"
)

// Key is the environment facts source key.
const Key = "core/environment"

// Facts is the observed environment of a Location.
type Facts struct {
	WorkingDirectory string `json:"workingDirectory"`
	ProjectRoot      string `json:"projectRoot"`
	GitRepository    bool   `json:"gitRepository"`
	Platform         string `json:"platform"`
	OS               string `json:"os"`
	Shell            string `json:"shell"`
}

// Config says which Location to observe.
type Config struct {
	// Directory is the Location's working directory. Required.
	Directory string
	// ProjectRoot overrides the discovered root. Default: the nearest ancestor of
	// Directory (itself included) holding ".git", else Directory.
	ProjectRoot string
	// Shell overrides the shell reported. Default: $SHELL, else "/bin/sh".
	Shell string
	// Getenv reads the environment. Default: os.Getenv.
	Getenv func(string) string
	// OSReleasePath is read for the OS name. Default: /etc/os-release (falling back to
	// the Go runtime's GOOS when it cannot be read).
	OSReleasePath string
}

func (c Config) withDefaults() (Config, error) {
	if c.Directory == "" {
		return c, errors.New("environment source: Directory is required")
	}
	abs, err := filepath.Abs(c.Directory)
	if err != nil {
		return c, fmt.Errorf("environment source: directory %q: %w", c.Directory, err)
	}
	c.Directory = abs
	if c.Getenv == nil {
		c.Getenv = os.Getenv
	}
	if c.OSReleasePath == "" {
		c.OSReleasePath = "/etc/os-release"
	}
	return c, nil
}

// Project is where a directory sits: its canonical path, its project root and whether
// that root is a git repository.
type Project struct {
	Directory string
	Root      string
	Git       bool
}

// ResolveProject canonicalizes dir and finds its project root: the nearest ancestor (dir
// included) that holds ".git", else dir itself.
func ResolveProject(dir string) (Project, error) {
	return resolveProject(context.Background(), dir)
}

// resolveProject shares the answer with the other sources of ctx's observation.
func resolveProject(ctx context.Context, dir string) (Project, error) {
	cdir, root, git, err := canon.ProjectAt(ctx, dir)
	if err != nil {
		return Project{}, fmt.Errorf("resolve project: %w", err)
	}
	return Project{Directory: cdir, Root: root, Git: git}, nil
}

// Observe reads the facts once.
func Observe(ctx context.Context, cfg Config) contextsources.Result[Facts] {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return contextsources.Unavailable[Facts](err)
	}
	return observe(ctx, cfg, osName(cfg.OSReleasePath))
}

func observe(ctx context.Context, cfg Config, osn string) contextsources.Result[Facts] {
	if err := ctx.Err(); err != nil {
		return contextsources.Unavailable[Facts](err)
	}
	var proj Project
	if cfg.ProjectRoot == "" {
		p, err := resolveProject(ctx, cfg.Directory)
		if err != nil {
			return contextsources.Unavailable[Facts](err)
		}
		proj = p
	} else {
		dir, err := canon.Dir(cfg.Directory)
		if err != nil {
			return contextsources.Unavailable[Facts](fmt.Errorf("working directory: %w", err))
		}
		root, err := canon.Dir(cfg.ProjectRoot)
		if err != nil {
			return contextsources.Unavailable[Facts](fmt.Errorf("project root: %w", err))
		}
		_, gerr := os.Lstat(filepath.Join(root, ".git"))
		if gerr != nil && !errors.Is(gerr, fs.ErrNotExist) {
			return contextsources.Unavailable[Facts](fmt.Errorf("project root: %w", gerr))
		}
		proj = Project{Directory: dir, Root: root, Git: gerr == nil}
	}
	shell := cfg.Shell
	if shell == "" {
		shell = cfg.Getenv("SHELL")
	}
	if shell == "" {
		shell = "/bin/sh"
	}
	return contextsources.Present(Facts{
		WorkingDirectory: proj.Directory,
		ProjectRoot:      proj.Root,
		GitRepository:    proj.Git,
		Platform:         runtime.GOOS + "/" + runtime.GOARCH,
		OS:               osn,
		Shell:            shell,
	})
}

// osName is PRETTY_NAME from os-release, else GOOS.
func osName(path string) string {
	b, err := os.ReadFile(path)
	if err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "PRETTY_NAME="); ok {
				if v = strings.Trim(v, `"'`); v != "" {
					return v
				}
			}
		}
	}
	return runtime.GOOS
}

// Render renders facts as the model sees them.
func Render(f Facts) string {
	yes := "no"
	if f.GitRepository {
		yes = "yes"
	}
	return "Here is some useful information about the environment you are running in:\n<env>\n" +
		"  Working directory: " + f.WorkingDirectory + "\n" +
		"  Project root: " + f.ProjectRoot + "\n" +
		"  Is directory a git repo: " + yes + "\n" +
		"  Platform: " + f.Platform + "\n" +
		"  OS: " + f.OS + "\n" +
		"  Shell: " + f.Shell + "\n" +
		"</env>"
}

// Source is the environment facts Context Source for cfg (not removable: a Location
// always has an environment). The OS name is read once, when the source first loads: it
// is a fact of the host, not of the Location.
func Source(cfg Config) (contextsources.Source, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return contextsources.Source{}, err
	}
	osOnce := sync.OnceValue(func() string { return osName(cfg.OSReleasePath) })
	return contextsources.Make(contextsources.Spec[Facts]{
		Key:      Key,
		Load:     func(ctx context.Context) contextsources.Result[Facts] { return observe(ctx, cfg, osOnce()) },
		Baseline: Render,
		Update: func(f Facts) string {
			return "The environment has changed; this is now in effect.\n" + Render(f)
		},
	})
}

// Context is the environment facts and host-local date of the Location at dir, with the
// project root discovered at every boundary (so a later "git init" is noticed).
func Context(dir string) (contextsources.SystemContext, error) {
	env, err := Source(Config{Directory: dir})
	if err != nil {
		return contextsources.SystemContext{}, err
	}
	return contextsources.New(env, DateSource(DateConfig{}))
}
