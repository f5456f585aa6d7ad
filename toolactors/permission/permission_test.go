package permission

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// The table holds OpenCode's own Wildcard.match cases (its
// test/util/wildcard.test.ts, arguments turned round: pattern first), then
// subjects that contain the pattern's own wildcards and regexp
// metacharacters, which must match as plain characters.
func TestMatchWildcards(t *testing.T) {
	cases := []struct {
		p, s string
		want bool
	}{
		// OpenCode's cases.
		{"file?.txt", "file1.txt", true},
		{"file?.txt", "file12.txt", false},
		{"foo+bar", "foo+bar", true},
		{"ls *", "ls", true},
		{"ls *", "ls -la", true},
		{"ls *", "ls foo bar", true},
		{"ls*", "ls", true},
		{"ls*", "lstmeval", true},
		{"ls *", "lstmeval", false},
		{"git *", "git status", true},
		{"git *", "git", true},
		{"git *", "git commit -m foo", true},
		{"C:/Windows/System32/*", `C:\Windows\System32\*`, true},
		{`C:\Windows\System32\*`, "C:/Windows/System32/drivers", true},
		{"/Users/test/*", "/users/test/file", false},
		// Ours.
		{"*", "anything/at/all", true},
		{"*", "", true},
		{"?", "", false},
		{"git *", "gitk", false},
		{"*.env", "/a/b/.env", true},
		{"*.env", "/a/b/env", false},
		{"src/?.go", "src/a.go", true},
		{"src/?.go", "src/ab.go", false},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"*", "line one\nline two", true},
		{"echo ?", "echo \n", true},
		{"?", "é", true},
		{"??", "é", false},
		{"caf?", "café", true},
		// Subjects holding the pattern's wildcards: they are characters there.
		{"*", "*.txt", true},
		{"*", "**/*.go", true},
		{"*", "*", true},
		{"*", "?", true},
		{"rm *", "rm *.txt", true},
		{"rm *", "rm -rf *", true},
		{"rm *", "rm *", true},
		{"*.txt", "*.txt", true},
		{"*.txt", "*.go", false},
		{"**/*.go", "**/*.go", true},
		{"**/*.go", "cmd/main.go", true},
		{"?", "*", true},
		{"?", "?", true},
		{"??", "*", false},
		{"a?c", "a*c", true},
		{"*?", "*", true},
		{"cat *?", "cat *", true},
		{"*a", "*a", true},
		{"**", "*", true},
		{"***", "", true},
		// Regexp metacharacters are plain characters, in patterns and subjects.
		{"foo.bar", "fooxbar", false},
		{"foo.bar", "foo.bar", true},
		{"a+", "aa", false},
		{"a+", "a+", true},
		{"^x$", "^x$", true},
		{"^x$", "x", false},
		{"(a|b)", "a", false},
		{"(a|b)", "(a|b)", true},
		{"[ab]", "a", false},
		{"[ab]", "[ab]", true},
		{"x{2}", "xx", false},
		{"x{2}", "x{2}", true},
		{"$HOME/*", "$HOME/.ssh/id_rsa", true},
		{"echo *", "echo $(rm -rf .)", true},
		{"grep *", "grep -E 'a.*b' [x]", true},
		{"*", "^.*$|()[]{}+?\\", true},
		{`a\.b`, "a/.b", true},
		{`a\.b`, "a.b", false},
	}
	for _, c := range cases {
		if got := Match(c.p, c.s); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.p, c.s, got, c.want)
		}
		if ref := referenceMatch(c.p, c.s); ref != c.want {
			t.Errorf("reference(%q, %q) = %v, want %v (the table is wrong)", c.p, c.s, ref, c.want)
		}
	}
}

// Decisions over subjects that contain wildcards: a deny on "rm *" denies
// "rm *.txt", and an allow-all agent asks for nothing, globs included.
func TestEvaluateSubjectsWithWildcards(t *testing.T) {
	deny := []Rule{{"bash", "*", Allow}, {"bash", "rm *", Deny}}
	for _, cmd := range []string{"rm *.txt", "rm *", "rm -rf ?", "rm"} {
		if d := Evaluate(deny, "bash", cmd); d.Effect != Deny {
			t.Errorf("deny bash %q: %q decided %s, want deny", "rm *", cmd, d.Effect)
		}
	}
	all := []Rule{{"*", "*", Allow}}
	for _, sub := range [][2]string{{"glob", "*.txt"}, {"glob", "**/*.go"}, {"grep", "?"}, {"read", "*"}, {"bash", "ls *"}} {
		if d := Evaluate(all, sub[0], sub[1]); d.Effect != Allow {
			t.Errorf("allow-all: %s %q decided %s, want allow", sub[0], sub[1], d.Effect)
		}
	}
	if d := Evaluate([]Rule{{"*", "*", Allow}, {"edit", "*.env", Deny}}, "edit", "*.env"); d.Effect != Deny {
		t.Errorf("deny edit *.env on the subject *.env: %s", d.Effect)
	}
}

// referenceMatch is OpenCode's Wildcard.match written as that regexp:
// backslashes read as slashes, `*` is ".*", `?` is ".", everything else
// literal, a trailing " *" optional, dot matching newlines, anchored.
func referenceMatch(pattern, s string) bool {
	pattern = strings.ReplaceAll(pattern, `\`, "/")
	s = strings.ReplaceAll(s, `\`, "/")
	var b strings.Builder
	for _, r := range pattern {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	re := b.String()
	if strings.HasSuffix(re, " .*") {
		re = re[:len(re)-3] + "( .*)?"
	}
	return regexp.MustCompile(`(?s)^(?:` + re + `)$`).MatchString(s)
}

// FuzzMatchAgreesWithReference compares Match with the regexp form on any
// pattern and subject.
func FuzzMatchAgreesWithReference(f *testing.F) {
	for _, seed := range [][2]string{{"*", "*.txt"}, {"rm *", "rm *.txt"}, {"a?c", "a*c"}, {"*?*", "é"}, {`a\*`, "a/b"}, {"x *", "x"}, {"**/*.go", "a/b.go"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		if !utf8.ValidString(pattern) || len(pattern) > 64 || len(s) > 256 {
			t.Skip() // regexp needs a valid pattern; long inputs add nothing
		}
		if got, want := Match(pattern, s), referenceMatch(pattern, s); got != want {
			t.Fatalf("Match(%q, %q) = %v, reference %v", pattern, s, got, want)
		}
	})
}

func TestHiddenWhenLastActionRuleDeniesAll(t *testing.T) {
	rules := []Rule{{"bash", "*", Allow}, {"bash", "*", Deny}}
	if !Hidden(rules, "bash") {
		t.Fatal("bash denied on * not hidden")
	}
	if Hidden(append(rules, Rule{"bash", "ls *", Allow}), "bash") {
		t.Fatal("bash with a later allow hidden")
	}
	if Hidden(rules, "read") {
		t.Fatal("read hidden by bash rules")
	}
}

func TestRuleValidate(t *testing.T) {
	if err := (Rule{"bash", "*", "perhaps"}).Validate(); err == nil {
		t.Fatal("bad effect accepted")
	}
	if err := (Rule{"bash", "*", Ask}).Validate(); err != nil {
		t.Fatal(err)
	}
}
