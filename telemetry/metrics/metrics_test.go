package metrics

import (
	"bufio"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
)

// sample is one parsed exposition line.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// parseExposition parses the text format line by line, failing the test on
// any line that is neither a HELP/TYPE comment nor a well-formed sample.
func parseExposition(t *testing.T, text string) (samples []sample, types map[string]string) {
	t.Helper()
	types = map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for ln := 1; sc.Scan(); ln++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# HELP "):
			if len(strings.SplitN(line, " ", 4)) != 4 {
				t.Fatalf("line %d: malformed HELP: %q", ln, line)
			}
			continue
		case strings.HasPrefix(line, "# TYPE "):
			f := strings.Fields(line)
			if len(f) != 4 {
				t.Fatalf("line %d: malformed TYPE: %q", ln, line)
			}
			types[f[2]] = f[3]
			continue
		case line == "" || strings.HasPrefix(line, "#"):
			t.Fatalf("line %d: unexpected line %q", ln, line)
		}
		s := sample{labels: map[string]string{}}
		rest := line
		if i := strings.IndexByte(line, '{'); i >= 0 {
			s.name = line[:i]
			j := strings.LastIndexByte(line, '}')
			if j < i {
				t.Fatalf("line %d: unbalanced braces: %q", ln, line)
			}
			body := line[i+1 : j]
			for body != "" {
				eq := strings.Index(body, `="`)
				if eq < 0 {
					t.Fatalf("line %d: bad label pair in %q", ln, line)
				}
				key := body[:eq]
				body = body[eq+2:]
				var val strings.Builder
				k := 0
				for ; k < len(body) && body[k] != '"'; k++ {
					if body[k] == '\\' && k+1 < len(body) {
						k++
						switch body[k] {
						case 'n':
							val.WriteByte('\n')
						default:
							val.WriteByte(body[k])
						}
						continue
					}
					val.WriteByte(body[k])
				}
				s.labels[key] = val.String()
				body = strings.TrimPrefix(body[k+1:], ",")
			}
			rest = strings.TrimSpace(line[j+1:])
		} else {
			f := strings.Fields(line)
			if len(f) != 2 {
				t.Fatalf("line %d: want `name value`, got %q", ln, line)
			}
			s.name, rest = f[0], f[1]
		}
		v, err := strconv.ParseFloat(strings.Replace(rest, "+Inf", "Inf", 1), 64)
		if err != nil {
			t.Fatalf("line %d: value %q: %v", ln, rest, err)
		}
		s.value = v
		samples = append(samples, s)
	}
	return samples, types
}

func find(samples []sample, name string, labels map[string]string) (float64, bool) {
next:
	for _, s := range samples {
		if s.name != name || len(s.labels) != len(labels) {
			continue
		}
		for k, v := range labels {
			if s.labels[k] != v {
				continue next
			}
		}
		return s.value, true
	}
	return 0, false
}

func expose(t *testing.T, reg *Registry) string {
	t.Helper()
	var b strings.Builder
	if err := reg.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	// An independent parser must accept it too.
	var p expfmt.TextParser
	if _, err := p.TextToMetricFamilies(strings.NewReader(b.String())); err != nil {
		t.Fatalf("prometheus text parser rejects the exposition: %v\n%s", err, b.String())
	}
	return b.String()
}

func TestRuntimeMetricsExposedAndParsedBack(t *testing.T) {
	reg := NewRegistry()
	rt, err := NewRuntime(reg)
	if err != nil {
		t.Fatal(err)
	}
	rt.SessionsActive.Inc()
	rt.SessionsActive.Inc()
	rt.SessionsActive.Dec()
	rt.DrainFinished("completed")
	rt.DrainFinished("completed")
	rt.DrainFinished("interrupted")
	rt.TurnFinished("openai", "tool_calls")
	rt.TurnFinished("openai", "stop")
	rt.ToolCallFinished("bash", "completed")
	rt.ToolCallFinished(`we"ird\tool`+"\n", "error")
	rt.JournalAppended(300 * time.Microsecond)
	rt.JournalAppended(2 * time.Millisecond)
	rt.JournalAppended(20 * time.Second)
	rt.ContextObserved("git", 40*time.Millisecond)
	rt.SourceUnavailable("lsp")

	samples, types := parseExposition(t, expose(t, reg))

	wantTypes := map[string]string{
		NameSessionsActive: "gauge", NameDrains: "counter", NameTurns: "counter",
		NameToolCalls: "counter", NameJournalAppend: "histogram",
		NameContextObservation: "histogram", NameSourcesUnavailable: "counter",
	}
	for n, typ := range wantTypes {
		if types[n] != typ {
			t.Errorf("TYPE of %s = %q, want %q", n, types[n], typ)
		}
	}
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{NameSessionsActive, nil, 1},
		{NameDrains, map[string]string{"outcome": "completed"}, 2},
		{NameDrains, map[string]string{"outcome": "interrupted"}, 1},
		{NameTurns, map[string]string{"provider": "openai", "finish_reason": "tool_calls"}, 1},
		{NameToolCalls, map[string]string{"tool": "bash", "status": "completed"}, 1},
		{NameToolCalls, map[string]string{"tool": `we"ird\tool` + "\n", "status": "error"}, 1},
		{NameJournalAppend + "_bucket", map[string]string{"le": "0.00025"}, 0},
		{NameJournalAppend + "_bucket", map[string]string{"le": "0.0005"}, 1},
		{NameJournalAppend + "_bucket", map[string]string{"le": "0.0025"}, 2},
		{NameJournalAppend + "_bucket", map[string]string{"le": "10"}, 2},
		{NameJournalAppend + "_bucket", map[string]string{"le": "+Inf"}, 3},
		{NameJournalAppend + "_count", nil, 3},
		{NameJournalAppend + "_sum", nil, 20.0023},
		{NameContextObservation + "_bucket", map[string]string{"source": "git", "le": "0.05"}, 1},
		{NameContextObservation + "_bucket", map[string]string{"source": "git", "le": "0.025"}, 0},
		{NameContextObservation + "_count", map[string]string{"source": "git"}, 1},
		{NameSourcesUnavailable, map[string]string{"source": "lsp"}, 1},
	}
	for _, c := range checks {
		got, ok := find(samples, c.name, c.labels)
		if !ok {
			t.Errorf("no sample %s%v", c.name, c.labels)
			continue
		}
		if math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

func TestExpositionIsSortedAndStable(t *testing.T) {
	reg := NewRegistry()
	b, _ := reg.CounterVec("b_total", "B.", "k")
	a, _ := reg.Gauge("a", "A with \\ and\nnewline.")
	a.Set(-2.5)
	for _, v := range []string{"z", "m", "a"} {
		c, err := b.With(v)
		if err != nil {
			t.Fatal(err)
		}
		c.Add(1)
	}
	want := "# HELP a A with \\\\ and\\nnewline.\n# TYPE a gauge\na -2.5\n" +
		"# HELP b_total B.\n# TYPE b_total counter\nb_total{k=\"a\"} 1\nb_total{k=\"m\"} 1\nb_total{k=\"z\"} 1\n"
	if got := expose(t, reg); got != want {
		t.Fatalf("exposition:\n%s\nwant:\n%s", got, want)
	}
}

func TestCounterIgnoresNegativeAndNonFinite(t *testing.T) {
	var c Counter
	c.Add(2)
	c.Add(-1)
	c.Add(math.NaN())
	c.Add(math.Inf(1))
	if c.Value() != 2 {
		t.Fatalf("counter = %v, want 2", c.Value())
	}
}

func TestRegistrationRejectsBadInput(t *testing.T) {
	reg := NewRegistry()
	if _, err := reg.Counter("ok_total", "x"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		err  error
		do   func() error
	}{
		{"duplicate name", ErrDuplicate, func() error { _, err := reg.Gauge("ok_total", "x"); return err }},
		{"bad metric name", ErrInvalid, func() error { _, err := reg.Counter("1bad", "x"); return err }},
		{"bad label name", ErrInvalid, func() error { _, err := reg.CounterVec("c", "x", "a-b"); return err }},
		{"reserved label", ErrInvalid, func() error { _, err := reg.CounterVec("c2", "x", "__x"); return err }},
		{"le on histogram", ErrInvalid, func() error { _, err := reg.HistogramVec("h", "x", []float64{1}, "le"); return err }},
		{"repeated label", ErrInvalid, func() error { _, err := reg.CounterVec("c3", "x", "a", "a"); return err }},
		{"no buckets", ErrInvalid, func() error { _, err := reg.Histogram("h2", "x", nil); return err }},
		{"unsorted buckets", ErrInvalid, func() error { _, err := reg.Histogram("h3", "x", []float64{1, 1}); return err }},
		{"infinite bucket", ErrInvalid, func() error { _, err := reg.Histogram("h4", "x", []float64{1, math.Inf(1)}); return err }},
	}
	for _, c := range cases {
		err := c.do()
		if !errors.Is(err, c.err) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.err)
		}
	}
	cv, err := reg.CounterVec("arity_total", "x", "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cv.With("only-one"); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "arity_total takes 2") {
		t.Fatalf("arity mismatch err = %v", err)
	}
	if _, err := NewRuntime(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := NewRuntime(reg); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("second NewRuntime on one registry: err = %v, want ErrDuplicate", err)
	}
}

func TestHandlerServesTextFormat(t *testing.T) {
	reg := NewRegistry()
	rt, err := NewRuntime(reg)
	if err != nil {
		t.Fatal(err)
	}
	rt.ToolCallFinished("bash", "completed")
	srv := httptest.NewServer(reg.Handler())
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != ContentType {
		t.Fatalf("status %d content-type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	samples, _ := parseExposition(t, string(body))
	if v, ok := find(samples, NameToolCalls, map[string]string{"tool": "bash", "status": "completed"}); !ok || v != 1 {
		t.Fatalf("tool call sample = %v %v", v, ok)
	}

	resp, err = http.Post(srv.URL+"/metrics", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST status = %d, want 405", resp.StatusCode)
	}
}

func TestConcurrentUpdatesAreCounted(t *testing.T) {
	reg := NewRegistry()
	rt, err := NewRuntime(reg)
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 1000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				rt.ToolCallFinished("bash", "completed")
				rt.JournalAppended(time.Duration(i+w) * time.Microsecond)
				if i%100 == 0 {
					_ = reg.WriteText(io.Discard)
				}
			}
		}()
	}
	wg.Wait()
	samples, _ := parseExposition(t, expose(t, reg))
	if v, _ := find(samples, NameToolCalls, map[string]string{"tool": "bash", "status": "completed"}); v != workers*each {
		t.Fatalf("tool calls = %v, want %d", v, workers*each)
	}
	if v, _ := find(samples, NameJournalAppend+"_count", nil); v != workers*each {
		t.Fatalf("append count = %v, want %d", v, workers*each)
	}
}

func TestLabelValuesNeverCollide(t *testing.T) {
	reg := NewRegistry()
	cv, err := reg.CounterVec("pairs_total", "x", "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	x, _ := cv.With("a\xff", "b")
	y, _ := cv.With("a", "\xffb")
	z, _ := cv.With("a", "\xffb")
	if x == y || y != z {
		t.Fatalf("children: %p %p %p; want two distinct, the last two equal", x, y, z)
	}
	x.Inc()
	samples, _ := parseExposition(t, expose(t, reg)) // invalid UTF-8 is exposed as U+FFFD
	if v, ok := find(samples, "pairs_total", map[string]string{"a": "a\uFFFD", "b": "b"}); !ok || v != 1 {
		t.Fatalf("sample with replaced invalid UTF-8: %v %v", v, ok)
	}
}
