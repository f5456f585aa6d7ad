package filesnap

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

var (
	// ErrNotFound: no tree (or blob) with that ID is in the store.
	ErrNotFound = errors.New("snapshot not found")
	// ErrTooManyFiles: the Location tracks more files than Config.MaxFiles
	// (a home directory, not a project): no snapshot is taken.
	ErrTooManyFiles = errors.New("too many files to snapshot")
)

// Defaults of Config.
const (
	DefaultMaxFileSize = 10 << 20
	DefaultMaxFiles    = 100000
)

// Config configures a Store.
type Config struct {
	// Dir holds the store (created if missing). Required.
	Dir string
	// MaxFileSize: larger files are not tracked. Default DefaultMaxFileSize.
	MaxFileSize int64
	// MaxFiles: a Location tracking more files is not snapshotted (Take
	// fails with ErrTooManyFiles as soon as the walk passes it), so a
	// session started in a home directory does not copy it every turn.
	// Default DefaultMaxFiles.
	MaxFiles int
}

// Store is the snapshot store of a data directory. It is safe for
// concurrent use; Takes of one Location are serialized.
type Store struct {
	cfg   Config
	mu    sync.Mutex
	roots map[string]*rootState
	// gc is held shared by every Take and Restore and exclusively by GC,
	// so a collection never sees a Take's blobs before its tree.
	gc sync.RWMutex
}

// rootState is what the store keeps in memory for one Location, guarded
// by mu: its stat cache and last tree, so a Take with nothing changed
// neither decodes the cache nor renders and hashes the manifest.
type rootState struct {
	mu    sync.Mutex
	index map[string]cached // nil until read from disk
	tree  string            // the last tree Take returned for this index
	// tooMany is when a Take last found more than MaxFiles: Takes within
	// tooManyRetry of it fail at once instead of walking again.
	tooMany time.Time
}

// tooManyRetry is how long a Location found too large is not walked again.
const tooManyRetry = 10 * time.Minute

// Open opens (creating) the store in cfg.Dir.
func Open(cfg Config) (*Store, error) {
	if cfg.Dir == "" {
		return nil, errors.New("filesnap: Config.Dir is required")
	}
	if cfg.MaxFileSize <= 0 {
		cfg.MaxFileSize = DefaultMaxFileSize
	}
	if cfg.MaxFiles <= 0 {
		cfg.MaxFiles = DefaultMaxFiles
	}
	for _, d := range []string{"blobs", "trees", "index"} {
		if err := os.MkdirAll(filepath.Join(cfg.Dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("filesnap: open %s: %w", cfg.Dir, err)
		}
	}
	return &Store{cfg: cfg, roots: map[string]*rootState{}}, nil
}

// Mode is how an entry is restored.
type Mode uint8

const (
	Regular    Mode = 'f'
	Executable Mode = 'x'
	Symlink    Mode = 'l' // the blob holds the link's target
)

// Entry is one tracked file of a tree.
type Entry struct {
	Path string // slash-separated, relative to the Location
	Mode Mode
	Size int64
	Blob string // sha256 hex of the content
}

// Tree is one snapshot: the tracked files, sorted by path.
type Tree struct {
	ID      string
	Entries []Entry
}

// Lookup returns the entry for path, or false.
func (t *Tree) Lookup(path string) (Entry, bool) {
	i := sort.Search(len(t.Entries), func(i int) bool { return t.Entries[i].Path >= path })
	if i < len(t.Entries) && t.Entries[i].Path == path {
		return t.Entries[i], true
	}
	return Entry{}, false
}

// cached is the stat cache's record of one file.
type cached struct {
	Size, Mtime, Ctime int64
	Ino                uint64
	Mode               Mode
	Blob               string
}

func (s *Store) root(root string) *rootState {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.roots[root]
	if r == nil {
		r = &rootState{}
		s.roots[root] = r
	}
	return r
}

func (s *Store) rootLock(root string) *sync.Mutex { return &s.root(root).mu }

func (s *Store) indexPath(root string) string {
	h := sha256.Sum256([]byte(root))
	return filepath.Join(s.cfg.Dir, "index", hex.EncodeToString(h[:16]))
}

func (s *Store) blobPath(id string) string {
	return filepath.Join(s.cfg.Dir, "blobs", id[:2], id[2:])
}

func (s *Store) treePath(id string) string {
	return filepath.Join(s.cfg.Dir, "trees", id)
}

// Take snapshots the tracked files under root and returns the tree's ID.
// Files whose size, mtime, ctime, inode and mode match the stat cache are
// not read; new blobs and the tree are durable before Take returns, so an ID
// written to the journal afterwards always names a restorable tree.
func (s *Store) Take(root string) (string, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("filesnap: take %s: %w", root, err)
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		if err == nil {
			err = errors.New("not a directory")
		}
		return "", fmt.Errorf("filesnap: take %s: %w", root, err)
	}
	s.gc.RLock()
	defer s.gc.RUnlock()
	rs := s.root(root)
	rs.mu.Lock()
	defer rs.mu.Unlock()

	start := time.Now()
	if !rs.tooMany.IsZero() && start.Sub(rs.tooMany) < tooManyRetry {
		return "", fmt.Errorf("filesnap: take %s: %w: more than %d (filesnap.Config.MaxFiles; checked %s ago)",
			root, ErrTooManyFiles, s.cfg.MaxFiles, start.Sub(rs.tooMany).Round(time.Second))
	}
	if rs.index == nil {
		rs.index = s.loadIndex(root)
	}
	old := rs.index
	next := make(map[string]cached, len(old))
	var entries []Entry
	changed, newBlobs := false, false
	ig := newIgnorer(root)
	var walk func(dir string) error
	walk = func(dir string) error {
		mark := ig.enter(dir)
		defer ig.leave(mark)
		abs := root
		if dir != "" {
			abs = root + "/" + dir
		}
		des, err := os.ReadDir(abs)
		if err != nil {
			if dir != "" && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission)) {
				return nil // vanished or unreadable under us: not tracked
			}
			return err
		}
		for _, de := range des {
			name := de.Name()
			rel := name
			if dir != "" {
				rel = dir + "/" + name
			}
			if name == ".git" {
				continue
			}
			t := de.Type()
			if t.IsDir() {
				if ig.ignored(rel, true) {
					continue
				}
				if err := walk(rel); err != nil {
					return err
				}
				continue
			}
			if !t.IsRegular() && t&fs.ModeSymlink == 0 {
				continue // sockets, pipes, devices
			}
			if ig.ignored(rel, false) {
				continue
			}
			e, c, hashed, err := s.track(abs+"/"+name, rel, old, start, &newBlobs)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				return err
			}
			if c == nil {
				continue
			}
			changed = changed || hashed
			next[rel] = *c
			entries = append(entries, e)
			if len(entries) > s.cfg.MaxFiles {
				return fmt.Errorf("%w: more than %d (filesnap.Config.MaxFiles)", ErrTooManyFiles, s.cfg.MaxFiles)
			}
		}
		return nil
	}
	if err := walk(""); err != nil {
		if errors.Is(err, ErrTooManyFiles) {
			rs.tooMany = start
		}
		return "", fmt.Errorf("filesnap: take %s: %w", root, err)
	}
	rs.tooMany = time.Time{}
	if len(next) != len(old) {
		changed = true
	}
	if !changed && rs.tree != "" {
		s.touch(s.treePath(rs.tree))
		return rs.tree, nil
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	if newBlobs {
		// The blobs are durable before a tree names them.
		if err := syncFS(s.cfg.Dir); err != nil {
			return "", fmt.Errorf("filesnap: take %s: sync blobs: %w", root, err)
		}
	}
	id, err := s.writeTree(entries)
	if err != nil {
		return "", fmt.Errorf("filesnap: take %s: %w", root, err)
	}
	if changed {
		s.saveIndex(root, next)
	}
	rs.index, rs.tree = next, id
	return id, nil
}

// track stats one file and returns its entry, hashing (and storing) its
// content unless the stat cache vouches for it. A nil cache record means
// the file is not tracked (too large).
func (s *Store) track(abs, rel string, old map[string]cached, start time.Time, newBlobs *bool) (Entry, *cached, bool, error) {
	fi, err := os.Lstat(abs)
	if err != nil {
		return Entry{}, nil, false, err
	}
	c := cached{Size: fi.Size(), Mtime: fi.ModTime().UnixNano(), Mode: modeOf(fi)}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		c.Ino, c.Ctime = st.Ino, st.Ctim.Sec*1e9+st.Ctim.Nsec
	}
	if c.Mode != Symlink && c.Size > s.cfg.MaxFileSize {
		return Entry{}, nil, false, nil
	}
	// A file changed within the clock's granularity of the last Take may
	// have been written again with the same stat ("racily clean", as git
	// calls it): only files older than a second are trusted to the cache.
	if p, ok := old[rel]; ok && p.Size == c.Size && p.Mtime == c.Mtime && p.Ctime == c.Ctime &&
		p.Ino == c.Ino && p.Mode == c.Mode && start.UnixNano()-c.Mtime > int64(time.Second) {
		return Entry{Path: rel, Mode: c.Mode, Size: c.Size, Blob: p.Blob}, &p, false, nil
	}
	var data []byte
	if c.Mode == Symlink {
		target, err := os.Readlink(abs)
		if err != nil {
			return Entry{}, nil, false, err
		}
		data = []byte(target)
	} else if data, err = os.ReadFile(abs); err != nil {
		return Entry{}, nil, false, err
	}
	c.Size = int64(len(data))
	blob, wrote, err := s.putBlob(data)
	if err != nil {
		return Entry{}, nil, false, err
	}
	if wrote {
		*newBlobs = true
	}
	c.Blob = blob
	p, had := old[rel]
	return Entry{Path: rel, Mode: c.Mode, Size: c.Size, Blob: blob}, &c, !had || p != c, nil
}

func modeOf(fi fs.FileInfo) Mode {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return Symlink
	case fi.Mode()&0o111 != 0:
		return Executable
	}
	return Regular
}

// putBlob stores data under its hash unless it is already there. The blob
// is not synced here: Take syncs the file system once before it writes the
// tree that names it. wrote says a new blob was written.
func (s *Store) putBlob(data []byte) (id string, wrote bool, err error) {
	h := sha256.Sum256(data)
	id = hex.EncodeToString(h[:])
	p := s.blobPath(id)
	if _, err := os.Stat(p); err == nil {
		return id, false, nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", false, err
	}
	return id, true, writeFile(p, data, false)
}

// writeSynced writes data to p through a synced temporary file and a rename.
func writeSynced(p string, data []byte) error { return writeFile(p, data, true) }

// writeFile writes data to p through a temporary file and a rename.
func writeFile(p string, data []byte, sync bool) error {
	return writeAtomic(p, data, 0, sync, ".tmp-*")
}

// writeAtomic writes data to a temporary file beside p (named by pattern),
// sets perm unless it is 0, syncs it when asked and renames it over p, so
// a reader or a crash sees the old file or the new one, never a part.
func writeAtomic(p string, data []byte, perm fs.FileMode, sync bool, pattern string) error {
	f, err := os.CreateTemp(filepath.Dir(p), pattern)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && perm != 0 {
		err = f.Chmod(perm)
	}
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// writeTree stores the manifest (one line per entry: mode, size, blob, path)
// under its hash unless it is already there: a Take with nothing changed
// writes nothing.
func (s *Store) writeTree(entries []Entry) (string, error) {
	var b bytes.Buffer
	for _, e := range entries {
		fmt.Fprintf(&b, "%c %d %s %s\n", e.Mode, e.Size, e.Blob, strconv.Quote(e.Path))
	}
	h := sha256.Sum256(b.Bytes())
	id := hex.EncodeToString(h[:])
	p := s.treePath(id)
	if _, err := os.Stat(p); err == nil {
		s.touch(p)
		return id, nil
	}
	if err := writeSynced(p, b.Bytes()); err != nil {
		return "", err
	}
	return id, syncDir(filepath.Dir(p))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// validID reports whether id looks like a sha256 hex digest (IDs come from
// the journal and from clients: never let one name another path).
func validID(id string) bool {
	if len(id) != 64 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}

// Tree reads the tree with that ID.
func (s *Store) Tree(id string) (*Tree, error) {
	if !validID(id) {
		return nil, fmt.Errorf("filesnap: tree %q: %w", id, ErrNotFound)
	}
	f, err := os.Open(s.treePath(id))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("filesnap: tree %s: %w", id, ErrNotFound)
		}
		return nil, fmt.Errorf("filesnap: tree %s: %w", id, err)
	}
	defer f.Close()
	t := &Tree{ID: id}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		parts := strings.SplitN(line, " ", 4)
		if len(parts) != 4 || len(parts[0]) != 1 {
			return nil, fmt.Errorf("filesnap: tree %s: malformed line %q", id, line)
		}
		size, err1 := strconv.ParseInt(parts[1], 10, 64)
		p, err2 := strconv.Unquote(parts[3])
		if err1 != nil || err2 != nil || !validID(parts[2]) {
			return nil, fmt.Errorf("filesnap: tree %s: malformed line %q", id, line)
		}
		t.Entries = append(t.Entries, Entry{Path: p, Mode: Mode(parts[0][0]), Size: size, Blob: parts[2]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("filesnap: tree %s: %w", id, err)
	}
	return t, nil
}

// Blob reads a blob's content.
func (s *Store) Blob(id string) ([]byte, error) {
	if !validID(id) {
		return nil, fmt.Errorf("filesnap: blob %q: %w", id, ErrNotFound)
	}
	b, err := os.ReadFile(s.blobPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("filesnap: blob %s: %w", id, ErrNotFound)
	}
	return b, err
}

func (s *Store) loadIndex(root string) map[string]cached {
	m := map[string]cached{}
	f, err := os.Open(s.indexPath(root))
	if err != nil {
		return m
	}
	defer f.Close()
	if err := gob.NewDecoder(bufio.NewReader(f)).Decode(&m); err != nil {
		return map[string]cached{} // a cache: a damaged one is rebuilt
	}
	return m
}

// saveIndex replaces the stat cache. It is not synced: a lost or older
// cache only costs hashing again (a record that still matches the stat
// still names the right blob).
func (s *Store) saveIndex(root string, m map[string]cached) {
	p := s.indexPath(root)
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return
	}
	w := bufio.NewWriter(f)
	err = gob.NewEncoder(w).Encode(m)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
	}
}

// Restore makes each of paths under root what it is in the tree id: its
// content and mode when the tree has it, absent (and its emptied parent
// directories removed) when it does not. It is idempotent: running it
// again after a crash half-way finishes the job.
func (s *Store) Restore(root, id string, paths []string) error {
	root, err := filepath.Abs(root)
	if err != nil {
		return fmt.Errorf("filesnap: restore into %s: %w", root, err)
	}
	t, err := s.Tree(id)
	if err != nil {
		return err
	}
	for _, p := range paths {
		if err := checkRel(p); err != nil {
			return fmt.Errorf("filesnap: restore %s: %w", p, err)
		}
	}
	s.gc.RLock()
	defer s.gc.RUnlock()
	l := s.rootLock(root)
	l.Lock()
	defer l.Unlock()
	// Removals first: a file may come back where a removed directory was.
	var writes []Entry
	for _, p := range paths {
		e, ok := t.Lookup(p)
		if ok {
			writes = append(writes, e)
			continue
		}
		abs := filepath.Join(root, filepath.FromSlash(p))
		if err := os.Remove(abs); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("filesnap: restore %s: %w", p, err)
		}
		removeEmptyParents(root, filepath.Dir(abs))
	}
	for _, e := range writes {
		if err := s.restoreEntry(root, e); err != nil {
			return fmt.Errorf("filesnap: restore %s: %w", e.Path, err)
		}
	}
	return nil
}

func (s *Store) restoreEntry(root string, e Entry) error {
	data, err := s.Blob(e.Blob)
	if err != nil {
		return err
	}
	abs := filepath.Join(root, filepath.FromSlash(e.Path))
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return err
	}
	if fi, err := os.Lstat(abs); err == nil && fi.IsDir() {
		return fmt.Errorf("a directory is in the way")
	}
	if e.Mode == Symlink {
		if cur, err := os.Readlink(abs); err == nil && cur == string(data) {
			return nil
		}
		tmp := abs + ".filesnap-tmp"
		os.Remove(tmp)
		if err := os.Symlink(string(data), tmp); err != nil {
			return err
		}
		return os.Rename(tmp, abs)
	}
	perm := fs.FileMode(0o644)
	if e.Mode == Executable {
		perm = 0o755
	}
	if cur, err := os.ReadFile(abs); err == nil && bytes.Equal(cur, data) {
		if fi, err := os.Lstat(abs); err == nil && fi.Mode().IsRegular() && modeOf(fi) == e.Mode {
			return nil // already restored: leave its stat alone
		}
	}
	return writeAtomic(abs, data, perm, true, ".filesnap-*")
}

// removeEmptyParents removes dir and its parents up to (not including) root
// while they are empty.
func removeEmptyParents(root, dir string) {
	for dir != root && strings.HasPrefix(dir, root+string(filepath.Separator)) {
		if err := os.Remove(dir); err != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}

// checkRel refuses a path that could leave the Location.
func checkRel(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, `\`) {
		return fmt.Errorf("not a relative slash-separated path")
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("not a clean relative path")
		}
	}
	return nil
}
