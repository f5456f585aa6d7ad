package api

import (
	"context"
	"fmt"
	"testing"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/api/apitest"
	"github.com/sessionrt/sessionrt/api/client"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/messages"
)

func setup(b *testing.B) (*apitest.Runtime, *client.Client, string) {
	b.Helper()
	rt := apitest.Start(b, apitest.Options{})
	c, err := client.New(client.Config{BaseURL: rt.URL, Token: rt.Token})
	if err != nil {
		b.Fatal(err)
	}
	s, err := c.CreateSession(context.Background(), wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: rt.Loc}})
	if err != nil {
		b.Fatal(err)
	}
	return rt, c, s.ID
}

// BenchmarkPromptAdmission: one durable admission (resume false: no
// drain), over HTTP with the Go client and directly through the facade.
func BenchmarkPromptAdmission(b *testing.B) {
	ctx := context.Background()
	b.Run("http", func(b *testing.B) {
		_, c, id := setup(b)
		no := false
		b.ResetTimer()
		for i := range b.N {
			if _, err := c.Prompt(ctx, id, wire.PromptRequest{Prompt: &wire.Prompt{Text: fmt.Sprint("p", i)}, Resume: &no}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		rt, _, id := setup(b)
		b.ResetTimer()
		for i := range b.N {
			if _, err := rt.Node.Sessions.Prompt(ctx, id, actors.Prompt{Prompt: messages.Prompt{Text: fmt.Sprint("p", i)}, Delivery: messages.Steer}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// fill admits n prompts through the facade (no drain) and returns the head seq.
func fill(b *testing.B, rt *apitest.Runtime, id string, n int) int64 {
	b.Helper()
	var last int64
	for i := range n {
		r, err := rt.Node.Sessions.Prompt(context.Background(), id, actors.Prompt{Prompt: messages.Prompt{Text: fmt.Sprint("p", i)}, Delivery: messages.Queue})
		if err != nil {
			b.Fatal(err)
		}
		last = r.LastSeq
	}
	return last
}

// BenchmarkEventReplay: replaying a 1,000-event session over SSE, decoded
// by the Go client (reports events/s).
func BenchmarkEventReplay(b *testing.B) {
	rt, c, id := setup(b)
	head := fill(b, rt, id, 999)
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		st, err := c.Events(ctx, id, 0)
		if err != nil {
			b.Fatal(err)
		}
		for {
			ev, err := st.Next()
			if err != nil {
				b.Fatal(err)
			}
			if ev.Event.Durable != nil && ev.Event.Durable.Seq == head { // derived opening events have none
				break
			}
		}
		st.Close()
	}
	b.ReportMetric(float64(head)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkMessagesPage: one page of 100 user messages (queued prompts
// promoted by one run), as JSON over HTTP.
func BenchmarkMessagesPage(b *testing.B) {
	rt, c, id := setup(b)
	ctx := context.Background()
	// 100 steered prompts promote together into 100 user messages.
	for i := range 100 {
		if _, err := rt.Node.Sessions.Prompt(ctx, id, actors.Prompt{Prompt: messages.Prompt{Text: fmt.Sprint("p", i)}, Delivery: messages.Steer}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := c.Run(ctx, id); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		page, err := c.Messages(ctx, id, client.MessagesOptions{Limit: 100})
		if err != nil {
			b.Fatal(err)
		}
		if len(page.Data) != 100 {
			b.Fatalf("page of %d", len(page.Data))
		}
	}
}
