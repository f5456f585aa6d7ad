package title

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/sessionrt/sessionrt/provider"
)

// Instructions are the title request's system text. Test fakes recognise a
// title request by it.
const Instructions = `You name conversations so that their owner can find them again later.
Reply with a title for the conversation that begins with the user's message, and nothing else:
- one line of at most 50 characters, in the language of the message;
- say what the user wants done or asked about; keep technical terms, file names, numbers and error codes exactly;
- leave out filler words, quotes and a closing period;
- never answer the message, never use tools, never explain, never refuse;
- for a greeting or small talk, name its tone (for example "Greeting" or "Quick check-in").`

// MaxPrompt bounds the prompt text sent (bytes): its start names the
// conversation well enough, and a pasted log must not make the title cost
// as much as the turn.
const MaxPrompt = 8 << 10

// MaxRunes bounds a title: a longer line is cut and ends with "...".
const MaxRunes = 100

// Request is the title request for a conversation whose first prompt is
// prompt, to model: no tools, no history, the session's context left out.
func Request(model provider.ModelRef, prompt string) *provider.Request {
	if len(prompt) > MaxPrompt {
		cut := MaxPrompt
		for cut > 0 && !utf8.RuneStart(prompt[cut]) {
			cut--
		}
		prompt = prompt[:cut] + "\n[…]"
	}
	return &provider.Request{
		Model:      model,
		System:     Instructions,
		ToolChoice: provider.ToolChoiceNone,
		Messages: []provider.Message{{Role: provider.RoleUser,
			Text: "Write the title of the conversation that begins with this message:\n<message>\n" + prompt + "\n</message>"}},
	}
}

// ErrNoTitle: the model's answer held no line to use.
var ErrNoTitle = errors.New("the title model answered no title")

// Ask sends req to p and returns the title its answer gives.
func Ask(ctx context.Context, p provider.Provider, req *provider.Request) (string, error) {
	s, err := p.Stream(ctx, req)
	if err != nil {
		return "", fmt.Errorf("title request to %s: %w", req.Model, err)
	}
	acc, err := provider.Collect(s, req.Model.Provider)
	if err != nil {
		return "", fmt.Errorf("title from %s: %w", req.Model, err)
	}
	t := Clean(acc.Message().Text)
	if t == "" {
		return "", fmt.Errorf("title from %s: %w", req.Model, ErrNoTitle)
	}
	return t, nil
}

var thinking = regexp.MustCompile(`(?s)<think>.*?</think>`)

// quotes are what a model wraps a title in, outermost first.
var quotes = [][2]string{{"**", "**"}, {"*", "*"}, {`"`, `"`}, {"'", "'"}, {"`", "`"}, {"“", "”"}, {"‘", "’"}, {"«", "»"}}

// Clean reads a title from a model's answer: the first line with text,
// past any <think> block a reasoning model writes inline, without a
// "Title:" label, markdown emphasis or surrounding quotes; cut to MaxRunes.
// "" when there is none.
func Clean(answer string) string {
	answer = thinking.ReplaceAllString(answer, "")
	line := ""
	for l := range strings.SplitSeq(answer, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			line = l
			break
		}
	}
	line = strings.TrimLeft(line, "# ")
	if len(line) > 6 && strings.EqualFold(line[:6], "title:") {
		line = strings.TrimSpace(line[6:])
	}
	for _, q := range quotes {
		if len(line) >= len(q[0])+len(q[1]) && strings.HasPrefix(line, q[0]) && strings.HasSuffix(line, q[1]) {
			line = strings.TrimSpace(line[len(q[0]) : len(line)-len(q[1])])
		}
	}
	if utf8.RuneCountInString(line) > MaxRunes {
		r := []rune(line)
		line = strings.TrimSpace(string(r[:MaxRunes-3])) + "..."
	}
	return line
}
