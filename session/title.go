package session

import (
	"slices"
	"strings"

	"github.com/sessionrt/sessionrt/messages"
)

// Title asks the owner for a session title (Ready.Title): the session has
// none, and the turn whose TurnStarted is in the same Append makes its
// first prompt model-visible. The owner asks the title model off its
// mailbox, beside the turn and never in its way: the request is not part
// of the history and is not journaled. TitleGenerated brings the answer
// back; a failed request brings nothing (the owner logs it), and the
// session keeps its default title.
//
// A session is titled once: its SessionRenamed is the proof, and nothing
// asks again after it. An owner that dies before the answer is written
// (or while it is carried) does not ask again either (the first prompt is no longer the one a
// turn promotes), so a restart never repeats the request.
type Title struct {
	// Prompt is the first prompt's text (prompts promoted together:
	// joined, in order).
	Prompt string
}

// TitleGenerated: the title model named the session (Ready.Title).
type TitleGenerated struct{ Title string }

func (TitleGenerated) input() {}

// titleFor is the title request for the turn about to open, or nil: only
// when the session has no title and what is carried promotes its first
// prompts (no earlier user message is in the history, and no compaction
// summarised one away).
func (c *Core) titleFor() *Title {
	s := &c.State
	if s.Row.Title != "" || s.Row.HistorySeq != 0 || !s.History.Loaded {
		return nil
	}
	var promoted []string
	for _, ev := range c.Carry {
		if p, ok := ev.(messages.PromptPromoted); ok {
			promoted = append(promoted, p.MessageIDs...)
		}
	}
	if len(promoted) == 0 {
		return nil
	}
	// The history may already show the promotion (applied ahead of its
	// append): those messages are the first prompts themselves.
	for _, m := range s.History.Msgs {
		if m.Role == messages.RoleUser && !slices.Contains(promoted, m.ID) {
			return nil
		}
	}
	var texts []string
	for _, id := range promoted {
		if p := s.PendingInput(id); p != nil && strings.TrimSpace(p.Prompt.Text) != "" {
			texts = append(texts, p.Prompt.Text)
		}
	}
	if len(texts) == 0 {
		return nil // attachments alone: nothing to name it by
	}
	return &Title{Prompt: strings.Join(texts, "\n\n")}
}

// stepTitleGenerated names the session, unless a client gave it a title
// meanwhile (a client's title always wins) or it is gone. The rename is
// written at once when nothing is carried; otherwise it is carried too,
// after what is (the drain's next append writes it, with the turn's
// TurnStarted or with Idle): writing the carried events early would make
// a promotion durable without the turn it waits for.
func (c *Core) stepTitleGenerated(in TitleGenerated) Ready {
	if !c.State.Exists || c.State.Row.Title != "" || in.Title == "" || c.titleCarried() {
		return Ready{}
	}
	ev := messages.SessionRenamed{Title: in.Title}
	if len(c.Carry) > 0 {
		c.Carry = append(c.Carry, ev)
		return Ready{}
	}
	return Ready{Append: []messages.Event{ev}}
}

// titleCarried reports whether a title waits in the carry already.
func (c *Core) titleCarried() bool {
	for _, ev := range c.Carry {
		if _, ok := ev.(messages.SessionRenamed); ok {
			return true
		}
	}
	return false
}
