package api

import (
	"errors"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/toolactors/tools"
)

// The Location-scoped file routes of OpenCode's V2 API, for a client's
// file browser and @-mentions. Paths are relative to the Location and
// resolved with the read tool's authority (tools.Resolve): absolute paths,
// ".." escapes and symlinks leading outside are refused.
func (s *Server) fsRoutes() {
	s.mux.HandleFunc("GET /api/fs/list", s.fsList)
	s.mux.HandleFunc("GET /api/fs/find", s.fsFind)
	s.mux.HandleFunc("GET /api/fs/read/{path...}", s.fsRead)
}

// fsFindLimit bounds a find's answer; fsFindScan the entries it looks at.
const (
	fsFindLimit = 50
	fsFindMax   = 1000
	fsFindScan  = 200000
)

// fsPath resolves a Location-relative path, answering 400 when refused.
func fsPath(w http.ResponseWriter, dir, p string) (string, bool) {
	real, err := tools.Resolve(dir, p)
	if err != nil {
		badRequest(w, "path", "path", "%v", err)
		return "", false
	}
	return real, true
}

func entryType(d fs.DirEntry, full string) string {
	isDir := d.IsDir()
	if d.Type()&fs.ModeSymlink != 0 {
		if st, err := os.Stat(full); err == nil {
			isDir = st.IsDir()
		}
	}
	if isDir {
		return "directory"
	}
	return "file"
}

func (s *Server) fsList(w http.ResponseWriter, r *http.Request) {
	loc, ok := s.locationInfo(w, r)
	if !ok {
		return
	}
	target, ok := fsPath(w, loc.Directory, r.URL.Query().Get("path"))
	if !ok {
		return
	}
	entries, err := os.ReadDir(target)
	if err != nil {
		fsError(w, r.URL.Query().Get("path"), err)
		return
	}
	out := make([]wire.FileSystemEntry, 0, len(entries))
	for _, e := range entries {
		full := filepath.Join(target, e.Name())
		out = append(out, wire.FileSystemEntry{Path: tools.Rel(loc.Directory, full), Type: entryType(e, full)})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if (out[i].Type == "directory") != (out[j].Type == "directory") {
			return out[i].Type == "directory"
		}
		return out[i].Path < out[j].Path
	})
	writeJSON(w, http.StatusOK, wire.Located[[]wire.FileSystemEntry]{Location: loc, Data: out})
}

func fsError(w http.ResponseWriter, p string, err error) {
	if errors.Is(err, fs.ErrNotExist) {
		writeError(w, http.StatusNotFound, wire.Error{Tag: wire.TagNotFound, Message: "no such file or directory: " + p})
		return
	}
	badRequest(w, "path", "path", "%s: %v", p, err)
}

// fsFind ranks the Location's entries whose path contains the query (case
// insensitive): a name equal to it first, then names starting with it, then
// names containing it, then paths containing it; shorter paths first within
// a rank. .git and node_modules are not searched.
func (s *Server) fsFind(w http.ResponseWriter, r *http.Request) {
	loc, ok := s.locationInfo(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	query := strings.ToLower(strings.TrimSpace(q.Get("query")))
	if query == "" {
		badRequest(w, "query", "required", "query is required")
		return
	}
	kind := q.Get("type")
	if kind != "" && kind != "file" && kind != "directory" {
		badRequest(w, "type", "enum", "type %q: want file or directory", kind)
		return
	}
	limit := fsFindLimit
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			badRequest(w, "limit", "range", "limit %q: want a positive number", l)
			return
		}
		limit = min(n, fsFindMax)
	}
	type hit struct {
		e    wire.FileSystemEntry
		rank int
	}
	var hits []hit
	scanned := 0
	_ = filepath.WalkDir(loc.Directory, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == loc.Directory {
			return nil
		}
		if scanned++; scanned > fsFindScan || r.Context().Err() != nil {
			return filepath.SkipAll
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		t := entryType(d, p)
		if kind != "" && t != kind {
			return nil
		}
		rel := tools.Rel(loc.Directory, p)
		name, lrel := strings.ToLower(d.Name()), strings.ToLower(rel)
		rank := -1
		switch {
		case name == query:
			rank = 0
		case strings.HasPrefix(name, query):
			rank = 1
		case strings.Contains(name, query):
			rank = 2
		case strings.Contains(lrel, query):
			rank = 3
		}
		if rank >= 0 {
			hits = append(hits, hit{wire.FileSystemEntry{Path: rel, Type: t}, rank})
		}
		return nil
	})
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].rank != hits[j].rank {
			return hits[i].rank < hits[j].rank
		}
		if len(hits[i].e.Path) != len(hits[j].e.Path) {
			return len(hits[i].e.Path) < len(hits[j].e.Path)
		}
		return hits[i].e.Path < hits[j].e.Path
	})
	out := make([]wire.FileSystemEntry, 0, min(limit, len(hits)))
	for i := 0; i < len(hits) && i < limit; i++ {
		out = append(out, hits[i].e)
	}
	writeJSON(w, http.StatusOK, wire.Located[[]wire.FileSystemEntry]{Location: loc, Data: out})
}

// fsRead serves one file of the Location.
func (s *Server) fsRead(w http.ResponseWriter, r *http.Request) {
	loc, ok := s.locationInfo(w, r)
	if !ok {
		return
	}
	p := r.PathValue("path")
	target, ok := fsPath(w, loc.Directory, p)
	if !ok {
		return
	}
	f, err := os.Open(target)
	if err != nil {
		fsError(w, p, err)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		fsError(w, p, err)
		return
	}
	if !st.Mode().IsRegular() {
		badRequest(w, "path", "path", "%s is not a regular file", p)
		return
	}
	ct := mime.TypeByExtension(filepath.Ext(target))
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	http.ServeContent(w, r, "", st.ModTime(), f)
}
