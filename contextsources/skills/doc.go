// Package skills provides the selected agent's available-skill guidance as a Context
// Source ("agent/skills"): the names and descriptions of the skills that agent's
// permissions allow, never their bodies or locations (those go through the
// permission-checked skill tool).
//
// The Session actor composes this source with the Location registry's sources just
// before admission (Registry.ObserveWith), so an agent switch that changes the guidance
// becomes one Mid-Conversation System Message and an agent switch that does not is no
// change at all. DirCatalog reads skills from <dir>/<name>/SKILL.md front matter.
//
// It must not decide permissions (the caller passes Allowed) nor load skill bodies.
package skills
