package provider

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Accumulator folds the parts of one turn into the assistant message to
// record, its usage and its finish reason. The zero value is ready to use.
type Accumulator struct {
	// Provider is stamped on reasoning blocks (the adapter kind).
	Provider string

	text      strings.Builder
	reasoning []reasoningAcc
	calls     []ToolCall
	Usage     Usage
	Finish    FinishReason
	// Meta holds the non-reasoning metadata (response ID, model).
	Meta map[string]string
	// Output is true once a part other than metadata was added.
	Output bool
}

type reasoningAcc struct {
	text      strings.Builder
	signature string
	redacted  string
}

// Add folds one part in.
func (a *Accumulator) Add(p Part) {
	if p.Kind != PartMetadata {
		a.Output = true
	}
	switch p.Kind {
	case PartText:
		a.text.WriteString(p.Text)
	case PartReasoning:
		a.block(p.Index).text.WriteString(p.Text)
	case PartToolCall:
		a.calls = append(a.calls, ToolCall{ID: p.ID, Name: p.Name, Args: p.Args})
	case PartUsage:
		a.Usage = p.Usage
	case PartFinish:
		a.Finish = p.Finish
	case PartMetadata:
		switch p.Key {
		case MetaReasoningSignature:
			a.block(p.Index).signature += p.Text
		case MetaReasoningRedacted:
			a.block(p.Index).redacted = p.Text
		default:
			if a.Meta == nil {
				a.Meta = map[string]string{}
			}
			a.Meta[p.Key] = p.Text
		}
	}
}

func (a *Accumulator) block(i int) *reasoningAcc {
	if i < 0 {
		i = 0
	}
	for len(a.reasoning) <= i {
		a.reasoning = append(a.reasoning, reasoningAcc{})
	}
	return &a.reasoning[i]
}

// Message returns the assistant message accumulated so far.
func (a *Accumulator) Message() Message {
	m := Message{Role: RoleAssistant, Text: a.text.String(), ToolCalls: a.calls}
	for i := range a.reasoning {
		r := &a.reasoning[i]
		m.Reasoning = append(m.Reasoning, Reasoning{Text: r.text.String(), Signature: r.signature, Redacted: r.redacted, Provider: a.Provider})
	}
	return m
}

// Collect drains s into an Accumulator and closes it. It returns the
// accumulator (holding whatever arrived) and the stream's terminal error, nil
// on a clean finish.
func Collect(s Stream, provider string) (*Accumulator, error) {
	defer s.Close()
	a := &Accumulator{Provider: provider}
	for {
		p, err := s.Next()
		if errors.Is(err, io.EOF) {
			if a.Finish == "" {
				return a, &Error{Kind: KindMalformed, Provider: provider, Message: "stream ended without a finish part"}
			}
			return a, nil
		}
		if err != nil {
			return a, err
		}
		if a.Finish != "" {
			return a, &Error{Kind: KindMalformed, Provider: provider, Message: fmt.Sprintf("part %s after the finish part", p.Kind)}
		}
		a.Add(p)
	}
}
