package managed

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Prefix starts every managed file name.
const Prefix = "tool_"

// Defaults.
const (
	DefaultRetention     = 7 * 24 * time.Hour
	DefaultSweepInterval = time.Hour
)

// Config configures a Store.
type Config struct {
	// Dir is the flat directory holding the files (created on first write), usually
	// <data dir>/tool-output. Required.
	Dir string
	// Retention is how long a file is kept after its last modification; default 7 days.
	Retention time.Duration
	// SweepInterval is the period of Run's sweeps; default one hour.
	SweepInterval time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Logger receives operator diagnostics; default slog.Default().
	Logger *slog.Logger
}

// Store writes, recognizes and sweeps managed files. Safe for concurrent use.
type Store struct {
	cfg Config
	dir string // absolute, cleaned
}

// New returns a Store for cfg.
func New(cfg Config) (*Store, error) {
	if cfg.Dir == "" {
		return nil, errors.New("managed tool output: Config.Dir is required")
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("managed tool output dir %q: %w", cfg.Dir, err)
	}
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.SweepInterval <= 0 {
		cfg.SweepInterval = DefaultSweepInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Store{cfg: cfg, dir: filepath.Clean(dir)}, nil
}

// Dir is the absolute directory of the files.
func (s *Store) Dir() string { return s.dir }

// NewName returns a globally unique file name: the creation time in nanoseconds (so
// names sort by age) and 64 random bits.
func (s *Store) NewName() string {
	var r [8]byte
	_, _ = rand.Read(r[:]) // crypto/rand.Read never fails on Linux (it panics instead)
	return Prefix + strconv.FormatInt(s.cfg.Now().UnixNano(), 36) + "_" + hex.EncodeToString(r[:])
}

// Write stores text in a new managed file and returns its absolute path. The file is
// written to a temporary name and renamed, so a reader never sees half a file.
func (s *Store) Write(text string) (string, error) {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return "", fmt.Errorf("create managed tool output dir %s: %w", s.dir, err)
	}
	name := s.NewName()
	path := filepath.Join(s.dir, name)
	tmp := filepath.Join(s.dir, ".tmp-"+name)
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("write managed tool output %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("publish managed tool output %s: %w", path, err)
	}
	return path, nil
}

// Owns reports whether abs is the absolute path of a managed file of this store: a
// `tool_` name directly inside Dir. The read tool allows such absolute paths.
func (s *Store) Owns(abs string) bool {
	if !filepath.IsAbs(abs) {
		return false
	}
	clean := filepath.Clean(abs)
	return filepath.Dir(clean) == s.dir && strings.HasPrefix(filepath.Base(clean), Prefix)
}

// Sweep removes managed files whose modification time is older than the retention
// period, and stale temporary files of interrupted writes. Other files and
// directories are left. It returns how many files it removed; errors on single files are
// logged and the sweep goes on.
func (s *Store) Sweep() (int, error) {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sweep managed tool output dir %s: %w", s.dir, err)
	}
	cutoff := s.cfg.Now().Add(-s.cfg.Retention)
	removed := 0
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !(strings.HasPrefix(name, Prefix) || strings.HasPrefix(name, ".tmp-"+Prefix)) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed concurrently
		}
		if !info.ModTime().Before(cutoff) {
			continue
		}
		if err := os.Remove(filepath.Join(s.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.cfg.Logger.Warn("managed tool output sweep: remove failed", "file", name, "err", err)
			continue
		}
		removed++
	}
	return removed, nil
}

// Run sweeps once now and then every SweepInterval until ctx ends.
func (s *Store) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.SweepInterval)
	defer t.Stop()
	for {
		if n, err := s.Sweep(); err != nil {
			s.cfg.Logger.Warn("managed tool output sweep failed", "err", err)
		} else if n > 0 {
			s.cfg.Logger.Info("managed tool output sweep", "removed", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
