package permission

import (
	"context"
	"errors"
	"testing"
)

func TestMatchWildcards(t *testing.T) {
	cases := []struct {
		p, s string
		want bool
	}{
		{"*", "anything/at/all", true},
		{"git *", "git status", true},
		{"git *", "git", true},
		{"git *", "gitk", false},
		{"*.env", "/a/b/.env", true},
		{"*.env", "/a/b/env", false},
		{"src/?.go", "src/a.go", true},
		{"src/?.go", "src/ab.go", false},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
	}
	for _, c := range cases {
		if got := Match(c.p, c.s); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.p, c.s, got, c.want)
		}
	}
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

// answer is a client that answers every ask with the same reply and records the asks.
type answer struct {
	reply Reply
	asked []Request
}

func (a *answer) Ask(_ context.Context, r Request) (Reply, error) {
	a.asked = append(a.asked, r)
	return a.reply, nil
}

func TestS56_PermissionRules(t *testing.T) {
	ctx := context.Background()
	check := func(rules []Rule, res string) Check {
		return Check{Project: "p", Rules: rules, Request: Request{Action: "bash", Resources: []string{res}, Always: []string{"git *"}}}
	}

	t.Run("last matching rule wins", func(t *testing.T) {
		rules := []Rule{{"bash", "*", Deny}, {"bash", "git *", Allow}}
		if err := Authorize(ctx, check(rules, "git status"), nil, nil); err != nil {
			t.Fatalf("later allow lost: %v", err)
		}
		rules = []Rule{{"bash", "git *", Allow}, {"bash", "*", Deny}}
		var de *DeniedError
		if err := Authorize(ctx, check(rules, "git status"), nil, nil); !errors.As(err, &de) || de.Rule.Effect != Deny {
			t.Fatalf("later deny lost: %v", err)
		}
	})

	t.Run("no match asks; once allows this call only", func(t *testing.T) {
		a := &answer{reply: Reply{Answer: Once}}
		store := &MemoryApprovals{}
		for i := 0; i < 2; i++ {
			if err := Authorize(ctx, check(nil, "git status"), store, a); err != nil {
				t.Fatal(err)
			}
		}
		if len(a.asked) != 2 || a.asked[0].Resources[0] != "git status" {
			t.Fatalf("asks %+v, want two for git status", a.asked)
		}
	})

	t.Run("always is saved for the project, never above a deny", func(t *testing.T) {
		a := &answer{reply: Reply{Answer: Always}}
		store := &MemoryApprovals{}
		if err := Authorize(ctx, check(nil, "git status"), store, a); err != nil {
			t.Fatal(err)
		}
		if err := Authorize(ctx, check(nil, "git log"), store, a); err != nil {
			t.Fatal(err)
		}
		if len(a.asked) != 1 {
			t.Fatalf("saved approval not used: %d asks", len(a.asked))
		}
		saved, _ := store.Approvals(ctx, "p")
		if len(saved) != 1 || saved[0] != (Rule{"bash", "git *", Allow}) {
			t.Fatalf("saved %+v", saved)
		}
		if err := Authorize(ctx, check([]Rule{{"bash", "git push*", Deny}}, "git push"), store, a); !errors.Is(err, ErrDenied) {
			t.Fatalf("approval overrode a configured deny: %v", err)
		}
		if other, _ := store.Approvals(ctx, "q"); len(other) != 0 {
			t.Fatal("approval leaked to another project")
		}
	})

	t.Run("reject with and without feedback", func(t *testing.T) {
		var re *RejectedError
		err := Authorize(ctx, check(nil, "rm -rf x"), nil, &answer{reply: Reply{Answer: Reject}})
		if !errors.As(err, &re) || re.Feedback != "" || !errors.Is(err, ErrRejected) {
			t.Fatalf("reject: %v", err)
		}
		err = Authorize(ctx, check(nil, "rm -rf x"), nil, &answer{reply: Reply{Answer: Reject, Feedback: "use trash"}})
		if !errors.As(err, &re) || re.Feedback != "use trash" {
			t.Fatalf("reject with feedback: %v", err)
		}
	})

	t.Run("an unknown answer is an error naming it", func(t *testing.T) {
		err := Authorize(ctx, check(nil, "x"), nil, &answer{reply: Reply{Answer: "maybe"}})
		if err == nil || errors.Is(err, ErrRejected) {
			t.Fatalf("unknown answer: %v", err)
		}
	})
}

func TestRuleValidate(t *testing.T) {
	if err := (Rule{"bash", "*", "perhaps"}).Validate(); err == nil {
		t.Fatal("bad effect accepted")
	}
	if err := (Rule{"bash", "*", Ask}).Validate(); err != nil {
		t.Fatal(err)
	}
}
