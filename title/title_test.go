package title_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
	"github.com/sessionrt/sessionrt/title"
)

func TestCleanReadsOneLineTitle(t *testing.T) {
	for _, tc := range []struct{ answer, want string }{
		{"Postgres API connection", "Postgres API connection"},
		{"\n\n  Debugging production 500 errors  \nbecause the user asked", "Debugging production 500 errors"},
		{"<think>the user wants\na title</think>\nRate limiting implementation", "Rate limiting implementation"},
		{`Title: "Auth refresh token support"`, "Auth refresh token support"},
		{"**Dark mode toggle in App**", "Dark mode toggle in App"},
		{"# “Parser bug fix”", "Parser bug fix"},
		{"   \n<think>only thinking</think>\n", ""},
		{strings.Repeat("é", 150), strings.Repeat("é", 97) + "..."},
	} {
		if got := title.Clean(tc.answer); got != tc.want {
			t.Errorf("Clean(%q) = %q, want %q", tc.answer, got, tc.want)
		}
	}
}

func TestRequestCarriesThePromptOnlyBounded(t *testing.T) {
	m := provider.ModelRef{Provider: "p", Model: "small"}
	req := title.Request(m, "refactor user service")
	if req.Model != m || req.System != title.Instructions || len(req.Tools) != 0 || req.ToolChoice != provider.ToolChoiceNone ||
		len(req.Messages) != 1 || !strings.Contains(req.Messages[0].Text, "refactor user service") {
		t.Fatalf("request %+v", req)
	}
	long := strings.Repeat("ü", title.MaxPrompt) // two bytes a rune: cut mid-string
	text := title.Request(m, long).Messages[0].Text
	if len(text) > title.MaxPrompt+200 || !strings.Contains(text, "[…]") || !strings.Contains(text, "ü\n[…]") {
		t.Fatalf("a long prompt is sent as %d bytes, want it cut at a rune boundary near %d", len(text), title.MaxPrompt)
	}
}

func TestAskReturnsTheCleanTitleOrAnError(t *testing.T) {
	ctx := context.Background()
	req := title.Request(provider.ModelRef{Provider: "scripted", Model: "small"}, "hello")
	answer := func(turn scripted.Turn, err error) provider.Provider {
		p, perr := scripted.New(scripted.Config{Func: func(context.Context, *provider.Request, int) (scripted.Turn, error) { return turn, err }})
		if perr != nil {
			t.Fatal(perr)
		}
		return p
	}
	if got, err := title.Ask(ctx, answer(scripted.Turn{Text: "Greeting\n"}, nil), req); err != nil || got != "Greeting" {
		t.Fatalf("Ask = %q, %v", got, err)
	}
	if _, err := title.Ask(ctx, answer(scripted.Turn{Text: "  "}, nil), req); !errors.Is(err, title.ErrNoTitle) {
		t.Fatalf("an empty answer: %v, want ErrNoTitle", err)
	}
	if _, err := title.Ask(ctx, answer(scripted.Turn{}, errors.New("503 overloaded")), req); err == nil || !strings.Contains(err.Error(), "503 overloaded") {
		t.Fatalf("a failed request: %v", err)
	}
}
