package contextsources

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestObserveTurnsMisbehavingLoadersIntoUnavailable(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	cases := []struct {
		name string
		src  Source
		want error
	}{
		// Only this case waits for the deadline; the others return at once, so they get a
		// generous timeout and can also check that a healthy neighbour is unaffected.
		{"panic", MustMake(Spec[string]{Key: "t/panic",
			Load:     func(context.Context) Result[string] { panic("boom") },
			Baseline: func(string) string { return "" }}), ErrLoaderPanic},
		{"ignores its deadline", MustMake(Spec[string]{Key: "t/stuck",
			Load:     func(context.Context) Result[string] { <-release; return Present("late") },
			Baseline: func(string) string { return "" }}), ErrLoaderTimeout},
		{"value does not encode", MustMake(Spec[func()]{Key: "t/func",
			Load:     func(context.Context) Result[func()] { return Present(func() {}) },
			Baseline: func(func()) string { return "" }}), ErrEncode},
		{"codec writes invalid JSON", MustMake(Spec[string]{Key: "t/badjson", Codec: rawCodec{out: "{not json"},
			Load:     func(context.Context) Result[string] { return Present("x") },
			Baseline: func(string) string { return "" }}), ErrEncode},
		{"codec panics", MustMake(Spec[string]{Key: "t/codecpanic", Codec: rawCodec{panics: true},
			Load:     func(context.Context) Result[string] { return Present("x") },
			Baseline: func(string) string { return "" }}), ErrEncode},
		{"zero Result", MustMake(Spec[string]{Key: "t/zero",
			Load:     func(context.Context) Result[string] { return Result[string]{} },
			Baseline: func(string) string { return "" }}), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok := strSource(t, "t/ok", newCell("fine"), false)
			timeout := 10 * time.Second
			if errors.Is(tc.want, ErrLoaderTimeout) {
				timeout = 50 * time.Millisecond
			}
			obs := mustNew(t, ok, tc.src).Observe(context.Background(), ObserveConfig{Timeout: timeout})
			got, _ := obs.Lookup(tc.src.Key())
			if got.State != StateUnavailable {
				t.Fatalf("state %v, want unavailable", got.State)
			}
			if tc.want != nil && !errors.Is(got.Err, tc.want) {
				t.Fatalf("reason %v, want %v", got.Err, tc.want)
			}
			if o, _ := obs.Lookup("t/ok"); timeout > time.Second && o.State != StatePresent {
				t.Fatalf("a healthy source next to it is %v", o.State)
			}
			if _, err := Initialize(obs); !errors.Is(err, ErrUnavailable) {
				t.Fatalf("Initialize: %v, want ErrUnavailable", err)
			}
		})
	}
}

func TestObserveHonoursCallerCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	src := MustMake(Spec[string]{Key: "t/waits",
		Load:     func(ctx context.Context) Result[string] { <-ctx.Done(); return Unavailable[string](ctx.Err()) },
		Baseline: func(string) string { return "" }})
	obs := mustNew(t, src).Observe(ctx, ObserveConfig{})
	if got := obs.Unavailable(); len(got) != 1 || got[0] != "t/waits" {
		t.Fatalf("unavailable %v", got)
	}
}

func TestLoaderMaySayUnavailableExplicitly(t *testing.T) {
	c := &cell{r: Unavailable[string](errors.New("network down"))}
	obs := observe(mustNew(t, strSource(t, "t/net", c, true)))
	got, ok := obs.Lookup("t/net")
	if !ok || got.State != StateUnavailable || got.Err.Error() != "network down" {
		t.Fatalf("lookup %+v", got)
	}
}

// rawCodec is a custom codec that misbehaves on purpose.
type rawCodec struct {
	out    string
	panics bool
}

func (c rawCodec) Encode(string) ([]byte, error) {
	if c.panics {
		panic("codec bug")
	}
	return []byte(c.out), nil
}

func (c rawCodec) Decode(b []byte) (string, error) { return string(b), nil }
