package effect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/session"
)

// StreamPart is one part of a turn's stream, decoded for the core. A part
// the core has no use for comes too, with Part.Kind 0: the shell's
// mid-stream fault point counts every part the provider sent.
type StreamPart struct {
	Token uint64
	Part  session.StreamPart
}

// StreamEnded is the end of a turn's stream, with the error it met as its
// provider gave it (nil: finished, or ended without a finish part), and
// as the core takes it (In: the error's text and kind).
type StreamEnded struct {
	Token uint64
	Err   error
	In    session.StreamEnded
}

// Stream sends req to prov and posts every part of its stream, decoded
// (StreamPart), then StreamEnded, all tagged with token. It returns once
// the stream is over (ctx cancelled: the provider ends it); run it on its
// own goroutine. It never panics: a provider's panic is the stream's error.
func Stream(ctx context.Context, prov provider.Provider, req *provider.Request, token uint64, post Post) {
	err := pump(ctx, prov, req, func(p provider.Part) {
		post(&StreamPart{Token: token, Part: Decode(p)})
	})
	end := &StreamEnded{Token: token, Err: err}
	if err != nil {
		end.In.Err, end.In.Kind = err.Error(), provider.KindOf(err)
	}
	post(end)
}

// pump streams one provider turn, delivering every part; it never panics.
func pump(ctx context.Context, prov provider.Provider, req *provider.Request, deliver func(provider.Part)) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("provider panicked: %v", r)
		}
	}()
	s, err := prov.Stream(ctx, req)
	if err != nil {
		return err
	}
	defer s.Close()
	for {
		p, err := s.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		deliver(p)
		if p.Kind == provider.PartFinish {
			return nil
		}
	}
}

// Decode is a provider's part as the core's input (session.StreamPart):
// Kind 0 for a part the core has no use for (metadata other than the
// reasoning's, which is replayed to the same model; a kind it does not
// know). Its Args are its own copy.
func Decode(p provider.Part) session.StreamPart {
	in := session.StreamPart{Text: p.Text}
	switch p.Kind {
	case provider.PartText:
		in.Kind = session.PartText
	case provider.PartReasoning:
		in.Kind = session.PartReasoning
	case provider.PartToolInputStart, provider.PartToolInputDelta:
		in.Kind, in.CallID = session.PartToolInput, p.ID
	case provider.PartToolCall:
		in.Kind, in.CallID, in.Tool, in.Args = session.PartToolCall, p.ID, p.Name, append([]byte(nil), p.Args...)
	case provider.PartUsage:
		in.Kind, in.Usage = session.PartUsage, messages.Usage{
			InputTokens: int64(p.Usage.InputTokens), OutputTokens: int64(p.Usage.OutputTokens), ReasoningTokens: int64(p.Usage.ReasoningTokens),
			CacheReadTokens: int64(p.Usage.CacheReadTokens), CacheWriteTokens: int64(p.Usage.CacheWriteTokens),
		}
	case provider.PartFinish:
		in.Kind, in.Finish = session.PartFinish, string(p.Finish)
	case provider.PartMetadata:
		if strings.HasPrefix(p.Key, "reasoning.") {
			in.Kind, in.Key = session.PartReasoningMeta, p.Key
		}
	}
	if in.Kind == 0 {
		return session.StreamPart{}
	}
	return in
}
