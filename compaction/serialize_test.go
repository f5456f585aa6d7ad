package compaction

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sessionrt/sessionrt/messages"
)

func FuzzCutKeepsBoundAndValidUTF8(f *testing.F) {
	f.Add("hello world", 4)
	f.Add(strings.Repeat("日本語", 100), 10)
	f.Add(strings.Repeat("🙂a", 50), 7)
	f.Fuzz(func(t *testing.T, s string, maxBytes int) {
		if maxBytes < 0 || maxBytes > 1<<20 {
			return
		}
		c := cut(s, maxBytes, "")
		if len(s) <= maxBytes {
			if c != s {
				t.Fatalf("text within the bound changed")
			}
			return
		}
		if !strings.Contains(c, " bytes omitted …]") {
			t.Fatalf("cut without a marker: %q", c)
		}
		if utf8.ValidString(s) && !utf8.ValidString(c) {
			t.Fatalf("cut split a rune: %q", c)
		}
		body := len(c) - len(cut("", 0, "")) // marker with "0 bytes" is a lower bound
		if body > maxBytes+32 {
			t.Fatalf("cut kept %d bytes for a bound of %d", body, maxBytes)
		}
	})
}

func TestCutToTokensHonoursWideRunes(t *testing.T) {
	s := strings.Repeat("日本語のテキスト", 500)
	c := cutToTokens(s, 100)
	if TextTokens(c) > 100 || !utf8.ValidString(c) {
		t.Fatalf("%d tokens, valid %v", TextTokens(c), utf8.ValidString(c))
	}
}

func TestCheckpointIsTheActorsCompactionRendering(t *testing.T) {
	// actors/request.go renders a compaction message exactly so.
	if got := Checkpoint("S", "R"); got != "<conversation-summary>\nS\n</conversation-summary>\n<recent-context>\nR\n</recent-context>" {
		t.Fatalf("%q", got)
	}
	if got := Checkpoint("S", ""); got != "<conversation-summary>\nS\n</conversation-summary>" {
		t.Fatalf("%q", got)
	}
}

func TestSerializeToleratesIncompleteMessages(t *testing.T) {
	var b strings.Builder
	for _, m := range []messages.Message{
		{Role: messages.RoleUser}, // no prompt
		{Role: messages.RoleAssistant, Parts: []messages.Part{{Kind: messages.PartTool}}}, // no tool
		{Role: messages.RoleAssistant, Error: "provider failed"},
		{Role: "future-role"},
	} {
		serialize(&b, &m, bounds{Item: 10})
		b.WriteString("|")
	}
	if want := "[user]\n|[assistant]|[assistant]\n[turn failed: provider failed]|[future-role]|"; b.String() != want {
		t.Fatalf("%q\nwant %q", b.String(), want)
	}
}
