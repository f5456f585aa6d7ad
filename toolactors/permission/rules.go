package permission

import (
	"fmt"
	"strings"
)

// Effect is what a rule decides.
type Effect string

// Effects.
const (
	Allow Effect = "allow"
	Deny  Effect = "deny"
	Ask   Effect = "ask"
)

// Valid reports whether e is one of allow, deny, ask.
func (e Effect) Valid() bool { return e == Allow || e == Deny || e == Ask }

// Rule is one permission rule. Action and Resource are wildcard patterns: `*` matches
// any run of characters (slashes included), `?` one character; a pattern ending in
// " *" also matches without the suffix ("git *" matches "git").
type Rule struct {
	Action   string `json:"action" msgpack:"action"`
	Resource string `json:"resource" msgpack:"resource"`
	Effect   Effect `json:"effect" msgpack:"effect"`
}

func (r Rule) String() string {
	return fmt.Sprintf("{action %q, resource %q, %s}", r.Action, r.Resource, r.Effect)
}

// Validate reports a rule that cannot be evaluated.
func (r Rule) Validate() error {
	if r.Action == "" {
		return fmt.Errorf("permission rule %s: empty action", r)
	}
	if r.Resource == "" {
		return fmt.Errorf("permission rule %s: empty resource pattern", r)
	}
	if !r.Effect.Valid() {
		return fmt.Errorf("permission rule %s: effect must be allow, deny or ask", r)
	}
	return nil
}

// Decision is the outcome of Evaluate.
type Decision struct {
	Effect Effect
	Rule   *Rule // the deciding rule; nil when no rule matched (default ask)
}

// Evaluate returns the effect of the last rule matching action and resource; Ask when
// none matches.
func Evaluate(rules []Rule, action, resource string) Decision {
	for i := len(rules) - 1; i >= 0; i-- {
		r := rules[i]
		if Match(r.Action, action) && Match(r.Resource, resource) {
			return Decision{Effect: r.Effect, Rule: &rules[i]}
		}
	}
	return Decision{Effect: Ask}
}

// Hidden reports whether a tool acting as action is fully denied by rules, so that it
// is left out of the advertised catalog: the last rule whose action pattern matches is
// a deny on every resource ("*").
func Hidden(rules []Rule, action string) bool {
	for i := len(rules) - 1; i >= 0; i-- {
		r := rules[i]
		if Match(r.Action, action) {
			return r.Resource == "*" && r.Effect == Deny
		}
	}
	return false
}

// Match reports whether s matches the wildcard pattern.
func Match(pattern, s string) bool {
	if wildcard(pattern, s) {
		return true
	}
	if strings.HasSuffix(pattern, " *") {
		return wildcard(pattern[:len(pattern)-2], s)
	}
	return false
}

// wildcard is iterative glob matching with backtracking to the last star: linear in
// practice, no regexp compilation per call.
func wildcard(p, s string) bool {
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
