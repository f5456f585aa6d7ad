package api

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/sessionrt/sessionrt/api/wire"
)

// The project-wide request routes of OpenCode's V2 API: every pending
// permission request (and question) of a Location's sessions, and the
// saved approvals ("always" replies) of projects.
func (s *Server) requestRoutes() {
	s.mux.HandleFunc("GET /api/permission/request", s.locationPermissions)
	s.mux.HandleFunc("GET /api/permission/saved", s.savedPermissions)
	s.mux.HandleFunc("DELETE /api/permission/saved/{id}", s.removeSavedPermission)
	s.mux.HandleFunc("GET /api/question/request", s.locationQuestions)
}

// inLocation reports whether session id works in dir (a cache spares one
// read per request of the same session).
func (s *Server) inLocation(r *http.Request, dir string, id string, seen map[string]bool) bool {
	if in, ok := seen[id]; ok {
		return in
	}
	sess, err := s.cfg.Journal.Session(r.Context(), id)
	in := err == nil && sess.Location == dir
	seen[id] = in
	return in
}

func (s *Server) locationPermissions(w http.ResponseWriter, r *http.Request) {
	loc, ok := s.locationInfo(w, r)
	if !ok {
		return
	}
	perms, err := s.cfg.Journal.AllPendingPermissions(r.Context())
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	out := []wire.PermissionRequest{}
	seen := map[string]bool{}
	for _, p := range perms {
		if s.inLocation(r, loc.Directory, p.SessionID, seen) {
			out = append(out, toPermission(p))
		}
	}
	writeJSON(w, http.StatusOK, wire.Located[[]wire.PermissionRequest]{Location: loc, Data: out})
}

func (s *Server) savedPermissions(w http.ResponseWriter, r *http.Request) {
	saved, err := s.cfg.Journal.SavedApprovals(r.Context())
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	want := r.URL.Query().Get("projectID")
	out := []wire.SavedPermission{}
	for _, a := range saved {
		pid := projectID(a.Project)
		if want != "" && pid != want {
			continue
		}
		out = append(out, wire.SavedPermission{ID: strconv.FormatInt(a.ID, 10), ProjectID: pid, Action: a.Action, Resource: a.Resource})
	}
	writeJSON(w, http.StatusOK, wire.Data[[]wire.SavedPermission]{Data: out})
}

func (s *Server) removeSavedPermission(w http.ResponseWriter, r *http.Request) {
	raw := r.PathValue("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		badRequest(w, "id", "format", "saved permission id %q: want the id GET /api/permission/saved lists", raw)
		return
	}
	found, err := s.cfg.Journal.RemoveApproval(r.Context(), id)
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	if !found {
		writeError(w, http.StatusNotFound, wire.Error{Tag: wire.TagNotFound, Message: fmt.Sprintf("no saved permission %s", raw)})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
