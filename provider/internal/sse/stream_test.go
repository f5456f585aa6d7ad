package sse

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/provider"
)

// recorder is a Decoder that queues one text part per event, naming it.
type recorder struct {
	s        Stream
	finishAt string // data that finishes the turn
	atEnd    bool   // EndOfBody's answer
}

func (d *recorder) Event(ev Event) error {
	if string(ev.Data) == d.finishAt {
		d.s.Emit(provider.Part{Kind: provider.PartFinish, Finish: provider.FinishStop})
		d.s.Finish()
		return nil
	}
	d.s.Emit(provider.Part{Kind: provider.PartText, Text: string(ev.Name) + "=" + string(ev.Data)})
	return nil
}

func (d *recorder) EndOfBody() bool { return d.atEnd }

func drain(t *testing.T, body string, atEnd bool) ([]string, error) {
	t.Helper()
	d := &recorder{finishAt: "[DONE]", atEnd: atEnd}
	d.s.Init(context.Background(), "test", io.NopCloser(strings.NewReader(body)), d)
	defer d.s.Close()
	var got []string
	for {
		p, err := d.s.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return got, err
		}
		got = append(got, p.Kind.String()+":"+p.Text)
	}
}

func TestAnErrorFieldLineReachesTheDecoderAsAnErrorEvent(t *testing.T) {
	got, err := drain(t, "data: a\n\n: keep-alive\n\nevent: ping\n\nerror: {\"m\":1}\n\ndata: [DONE]\n\n", false)
	if err != nil || strings.Join(got, " ") != `text:=a text:error={"m":1} finish:` {
		t.Fatalf("parts %q, err %v", got, err)
	}
}

func TestEndOfBodyFinishesOnlyWhenTheDecoderSaysSo(t *testing.T) {
	if got, err := drain(t, "data: a\n\n", true); err != nil || len(got) != 1 {
		t.Fatalf("finished turn: parts %q, err %v", got, err)
	}
	_, err := drain(t, "data: a\n\ndata: b", false)
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Kind != provider.KindRetryable || pe.Provider != "test" || !strings.Contains(pe.Snippet, "data: b") {
		t.Fatalf("cut stream: %v", err)
	}
}
