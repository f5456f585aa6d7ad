package permission

import (
	"fmt"
	"strings"
	"unicode/utf8"
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

// Rule is one permission rule. Action and Resource are wildcard patterns (see Match):
// `*` matches any run of characters (slashes included), `?` one character; a pattern
// ending in " *" also matches without the suffix ("git *" matches "git").
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

// Match reports whether s matches the wildcard pattern the way OpenCode's
// Wildcard.match does: `*` matches any run of characters (slashes and
// newlines included), `?` any one character, every other character only
// itself (regexp metacharacters are plain characters, and so are `*` and `?`
// in s), `\` and `/` are the same character, and a pattern ending in " *"
// also matches without that suffix ("git *" matches "git"). Case matters.
// One difference: OpenCode's `?` is one UTF-16 unit, ours one code point,
// so a character outside the Basic Multilingual Plane (an emoji) is one `?`
// here and two there.
func Match(pattern, s string) bool {
	if wildcard(pattern, s) {
		return true
	}
	if strings.HasSuffix(pattern, " *") {
		return wildcard(pattern[:len(pattern)-2], s)
	}
	return false
}

// wildcard is iterative glob matching with backtracking to the last star:
// linear in practice, no regexp compilation per call. A `*` in the pattern
// is always a wildcard, whatever s holds at that point (a subject such as
// "*.txt" must not turn the pattern's star into a literal).
func wildcard(p, s string) bool {
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		if pi < len(p) && p[pi] == '*' {
			star, mark = pi, si
			pi++
			continue
		}
		if pi < len(p) {
			if p[pi] == '?' {
				_, w := utf8.DecodeRuneInString(s[si:])
				pi++
				si += w
				continue
			}
			if n := literal(p[pi:], s[si:]); n > 0 {
				pi += n
				si += n
				continue
			}
		}
		if star < 0 {
			return false
		}
		// Let the last star take one more character of s and retry.
		_, w := utf8.DecodeRuneInString(s[mark:])
		mark += w
		pi, si = star+1, mark
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// literal returns the length of p's first character when s starts with the
// same one (backslash and slash alike), else 0.
func literal(p, s string) int {
	_, n := utf8.DecodeRuneInString(p)
	if len(s) < n {
		return 0
	}
	if n == 1 {
		if slash(p[0]) == slash(s[0]) {
			return 1
		}
		return 0
	}
	if p[:n] == s[:n] {
		return n
	}
	return 0
}

func slash(c byte) byte {
	if c == '\\' {
		return '/'
	}
	return c
}
