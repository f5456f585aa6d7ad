package actors

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/session"
)

// A fork is a new session that starts with a copy of another's history
// (OpenCode's session.fork). It is a creation like any other, whose append
// also carries the copy (Create.Copied, messages.HistoryCopied): the child
// owns its history from its first seq, so the source is neither asked nor
// changed (it may be running), and nothing either session does later
// (a revert, a compaction, a delete) touches the other.
//
// What is copied is the source's durable history as its message list
// shows it (a committed revert's messages are not in it), read in one
// snapshot. Left out: the system messages of its Context Epochs (the
// child's first turn states its own context), and prompts admitted but not
// yet promoted (not history yet). A running turn's assistant message is
// copied as far as it is durable and closed as interrupted, its unsettled
// tool calls failed as an interrupt fails them: that is what the model of
// an OpenCode fork sees of it (OpenCode copies the message as it is, and
// renders its running calls to the model as interrupted). The child is
// not the source's child session (OpenCode sets no parentID on a fork); it
// works in the same Location with the source's agent and model, and is
// titled as OpenCode titles a fork ("title (fork #n)").

// ForkOf reads session source's history and returns the Create of its fork
// before messageID ("": the whole history). An unknown source, or a
// messageID that is not in its history, is CodeNotFound.
func ForkOf(ctx context.Context, j *persistence.Journal, source, messageID string) (Create, error) {
	src, err := j.Session(ctx, source)
	if errors.Is(err, persistence.ErrNotFound) {
		return Create{}, &CommandError{Code: CodeNotFound, Msg: fmt.Sprintf("session %s not found", source)}
	} else if err != nil {
		return Create{}, err
	}
	page, err := j.Messages(ctx, source, persistence.Cursor{}, 1<<30) // one read: one snapshot
	if err != nil {
		return Create{}, err
	}
	msgs := page.Messages
	title := src.Title
	if title == "" {
		title = DefaultTitle(msgs)
	}
	if messageID != "" {
		i := 0
		for i < len(msgs) && msgs[i].ID != messageID {
			i++
		}
		if i == len(msgs) {
			return Create{}, &CommandError{Code: CodeNotFound, Msg: fmt.Sprintf("session %s has no message %s", source, messageID)}
		}
		msgs = msgs[:i]
	}
	return Create{Location: src.Location, Agent: src.Agent, Model: src.Model, Title: forkTitle(title),
		Copied: copyHistory(source, messageID, msgs)}, nil
}

// Fork creates the fork of session source before messageID (ForkOf).
func (s *Sessions) Fork(ctx context.Context, source, messageID string) (*Info, error) {
	c, err := ForkOf(ctx, s.rt.journal, source, messageID)
	if err != nil {
		return nil, err
	}
	return s.Create(ctx, "", c)
}

// copyHistory is msgs as the events that copy them: fresh IDs in their
// order, one event per compaction (each begins one), unfinished turns
// closed. There is always one event, which names the source.
func copyHistory(source, messageID string, msgs []messages.Message) []messages.HistoryCopied {
	kept := make([]messages.Message, 0, len(msgs))
	for _, m := range msgs {
		if m.Role != messages.RoleSystem {
			kept = append(kept, m)
		}
	}
	prefixes := make([]string, len(kept))
	for i, m := range kept {
		prefixes[i], _, _ = strings.Cut(m.ID, "_")
	}
	ids := messages.NewIDs(prefixes...)
	out := []messages.HistoryCopied{{From: source, MessageID: messageID}}
	for i, m := range kept {
		if m.Role == messages.RoleCompaction && len(out[len(out)-1].Messages) > 0 {
			out = append(out, messages.HistoryCopied{From: source, MessageID: messageID})
		}
		body := m
		body.ID, body.Seq, body.Index, body.Role = "", 0, 0, ""
		body.Parts = append([]messages.Part(nil), m.Parts...)
		for j := range body.Parts {
			p := &body.Parts[j]
			p.Seq = 0
			if p.Tool != nil && p.Tool.State != messages.ToolStateCompleted && p.Tool.State != messages.ToolStateFailed {
				t := *p.Tool
				t.State, t.Error = messages.ToolStateFailed, session.InterruptedToolError
				p.Tool = &t
			}
		}
		if m.Role == messages.RoleAssistant && !m.Finished {
			body.Finished, body.ErrorKind, body.Error = true, string(session.Interrupted), "interrupted"
		}
		last := &out[len(out)-1]
		last.Messages = append(last.Messages, messages.CopiedMessage{ID: ids[i], Role: m.Role, Body: body})
	}
	return out
}

// DefaultTitle is the title a session its client did not title shows:
// the start of its first message when that is a user prompt ("" else).
func DefaultTitle(msgs []messages.Message) string {
	if len(msgs) == 0 || msgs[0].Prompt == nil {
		return ""
	}
	t := strings.Join(strings.Fields(msgs[0].Prompt.Text), " ")
	if r := []rune(t); len(r) > 80 {
		t = string(r[:79]) + "…"
	}
	return t
}

var forkNumber = regexp.MustCompile(`^(.+) \(fork #(\d+)\)$`)

// forkTitle is OpenCode's title of a fork of a session titled title: a
// fork of a fork counts up. An untitled session's fork is untitled.
func forkTitle(title string) string {
	if title == "" {
		return ""
	}
	n := 1
	if m := forkNumber.FindStringSubmatch(title); m != nil {
		if k, err := strconv.Atoi(m[2]); err == nil {
			title, n = m[1], k+1
		}
	}
	suffix := fmt.Sprintf(" (fork #%d)", n)
	for len(title)+len(suffix) > session.MaxTitle {
		r := []rune(title)
		title = string(r[:len(r)-1])
	}
	return title + suffix
}
