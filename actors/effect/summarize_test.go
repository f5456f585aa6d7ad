package effect

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/compaction"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

func summaryPlan() *compaction.Plan {
	return &compaction.Plan{Request: testRequest(), RecentContext: "<recent>"}
}

// TestSummarizePostsTheSummary: the summary the provider streams is
// posted whole, tagged with the drain's token and the compaction's ID and
// recent context, after its text went to onDelta as it came.
func TestSummarizePostsTheSummary(t *testing.T) {
	prov := scriptedProvider(t, scripted.Turn{Text: "the user fixed the flaky test"})
	ch := make(posted, 1)
	var deltas strings.Builder // written on the request's goroutine, read after its post
	Summarize(context.Background(), prov, summaryPlan(), 9, "cmp_1", func(d string) { deltas.WriteString(d) }, ch.post)
	got, ok := ch.next(t).(*Summarized)
	if !ok || got.Err != nil || got.Token != 9 || got.ID != "cmp_1" || got.Recent != "<recent>" || got.Summary != "the user fixed the flaky test" {
		t.Fatalf("%#v, want the summary of cmp_1, token 9", got)
	}
	if deltas.String() != got.Summary {
		t.Fatalf("deltas %q, want the summary's text", deltas.String())
	}
	if reqs := prov.Requests(); len(reqs) != 1 {
		t.Fatalf("%d requests, want the summary's one", len(reqs))
	}
}

// TestSummarizePostsTheProvidersError: a provider that refuses the
// request, or panics, posts Summarized with the error and no summary.
func TestSummarizePostsTheProvidersError(t *testing.T) {
	ch := make(posted, 1)
	Summarize(context.Background(), scriptedProvider(t, scripted.Turn{Error: &scripted.ErrorSpec{Kind: "rate_limited"}}),
		summaryPlan(), 3, "cmp_2", nil, ch.post)
	got := ch.next(t).(*Summarized)
	if provider.KindOf(got.Err) != provider.KindRateLimited || got.Summary != "" || got.Token != 3 || got.ID != "cmp_2" {
		t.Fatalf("%#v, want the rate limit of cmp_2", got)
	}

	Summarize(context.Background(), panicking{}, summaryPlan(), 4, "cmp_3", nil, ch.post)
	got = ch.next(t).(*Summarized)
	if got.Err == nil || got.Err.Error() != "summary request panicked" || got.Token != 4 || got.ID != "cmp_3" {
		t.Fatalf("%#v, want the panic as cmp_3's error", got)
	}
}

// TestSummarizeCancelledPostsInterrupted: cancelling the request's
// context (an interrupt) ends a summary its provider never finishes; what
// streamed before is no summary.
func TestSummarizeCancelledPostsInterrupted(t *testing.T) {
	prov := scriptedProvider(t, scripted.Turn{Text: "half a summ", Hang: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := make(posted, 1)
	streamed := make(chan string, 1)
	Summarize(ctx, prov, summaryPlan(), 5, "cmp_4", func(d string) { streamed <- d }, ch.post)
	select {
	case d := <-streamed:
		if d != "half a summ" {
			t.Fatalf("delta %q before the hang", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no delta within 10s")
	}
	cancel()
	got := ch.next(t).(*Summarized)
	if provider.KindOf(got.Err) != provider.KindInterrupted || got.Summary != "" || got.Token != 5 {
		t.Fatalf("%#v (kind %v), want an interrupted request", got, provider.KindOf(got.Err))
	}
}
