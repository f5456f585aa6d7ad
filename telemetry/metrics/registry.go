package metrics

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Registry holds metric families and renders them in the Prometheus text format.
// It is safe for concurrent use; registration normally happens once at start-up.
type Registry struct {
	mu       sync.Mutex
	families map[string]family
}

// family is one metric name with its HELP, TYPE and samples.
type family interface {
	writeSamples(w *bufio.Writer)
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{families: make(map[string]family)} }

// Counter registers an unlabelled counter, exposed at zero from the start.
func (r *Registry) Counter(name, help string) (*Counter, error) {
	cv, err := r.CounterVec(name, help)
	if err != nil {
		return nil, err
	}
	return cv.With()
}

// CounterVec registers a counter family with the given label names.
func (r *Registry) CounterVec(name, help string, labels ...string) (*CounterVec, error) {
	if err := validate(name, labels, false); err != nil {
		return nil, err
	}
	cv := &CounterVec{name: name, v: newVec(slices.Clone(labels), func() *Counter { return new(Counter) })}
	f := &scalarFamily[Counter]{meta: meta{name, help, "counter"}, v: cv.v, value: (*Counter).Value}
	if err := r.add(name, f); err != nil {
		return nil, err
	}
	return cv, nil
}

// Gauge registers an unlabelled gauge, exposed at zero from the start.
func (r *Registry) Gauge(name, help string) (*Gauge, error) {
	gv, err := r.GaugeVec(name, help)
	if err != nil {
		return nil, err
	}
	return gv.With()
}

// GaugeVec registers a gauge family with the given label names.
func (r *Registry) GaugeVec(name, help string, labels ...string) (*GaugeVec, error) {
	if err := validate(name, labels, false); err != nil {
		return nil, err
	}
	gv := &GaugeVec{name: name, v: newVec(slices.Clone(labels), func() *Gauge { return new(Gauge) })}
	f := &scalarFamily[Gauge]{meta: meta{name, help, "gauge"}, v: gv.v, value: (*Gauge).Value}
	if err := r.add(name, f); err != nil {
		return nil, err
	}
	return gv, nil
}

// Histogram registers an unlabelled histogram with the given finite, strictly
// increasing bucket upper bounds (the +Inf bucket is implicit).
func (r *Registry) Histogram(name, help string, buckets []float64) (*Histogram, error) {
	hv, err := r.HistogramVec(name, help, buckets)
	if err != nil {
		return nil, err
	}
	return hv.With()
}

// HistogramVec registers a histogram family with the given buckets and label names.
func (r *Registry) HistogramVec(name, help string, buckets []float64, labels ...string) (*HistogramVec, error) {
	if err := validate(name, labels, true); err != nil {
		return nil, err
	}
	if err := validateBuckets(name, buckets); err != nil {
		return nil, err
	}
	upper := slices.Clone(buckets)
	hv := &HistogramVec{name: name, v: newVec(slices.Clone(labels), func() *Histogram { return newHistogram(upper) })}
	f := &histogramFamily{meta: meta{name, help, "histogram"}, v: hv.v}
	if err := r.add(name, f); err != nil {
		return nil, err
	}
	return hv, nil
}

func (r *Registry) add(name string, f family) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.families[name]; ok {
		return fmt.Errorf("%w: %q is already registered", ErrDuplicate, name)
	}
	r.families[name] = f
	return nil
}

// WriteText writes every family, sorted by name, in the Prometheus text
// exposition format 0.0.4.
func (r *Registry) WriteText(w io.Writer) error {
	r.mu.Lock()
	names := make([]string, 0, len(r.families))
	for n := range r.families {
		names = append(names, n)
	}
	fams := make([]family, len(names))
	sort.Strings(names)
	for i, n := range names {
		fams[i] = r.families[n]
	}
	r.mu.Unlock()

	bw := bufio.NewWriter(w)
	for _, f := range fams {
		f.writeSamples(bw)
	}
	return bw.Flush()
}

// ContentType is the media type of the text exposition format.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Handler serves the registry at whatever path it is mounted on (GET and HEAD).
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "metrics: method "+req.Method+" not allowed, use GET", http.StatusMethodNotAllowed)
			return
		}
		// Render fully first so a failure cannot leave a half-written 200.
		var buf bytes.Buffer
		if err := r.WriteText(&buf); err != nil {
			http.Error(w, "metrics: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", ContentType)
		w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
		if req.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(buf.Bytes())
	})
}

type meta struct{ name, help, typ string }

func (m meta) writeHeader(w *bufio.Writer) {
	w.WriteString("# HELP ")
	w.WriteString(m.name)
	w.WriteByte(' ')
	w.WriteString(escapeHelp(m.help))
	w.WriteString("\n# TYPE ")
	w.WriteString(m.name)
	w.WriteByte(' ')
	w.WriteString(m.typ)
	w.WriteByte('\n')
}

type scalarFamily[T any] struct {
	meta
	v     *vec[T]
	value func(*T) float64
}

func (f *scalarFamily[T]) writeSamples(w *bufio.Writer) {
	f.writeHeader(w)
	for _, c := range f.v.sorted() {
		writeSample(w, f.name, "", f.v.labels, c.values, "", "", f.value(c.m))
	}
}

type histogramFamily struct {
	meta
	v *vec[Histogram]
}

func (f *histogramFamily) writeSamples(w *bufio.Writer) {
	f.writeHeader(w)
	for _, c := range f.v.sorted() {
		cum, sum := c.m.snapshot()
		for i, n := range cum {
			le := "+Inf"
			if i < len(c.m.upper) {
				le = formatFloat(c.m.upper[i])
			}
			writeSample(w, f.name, "_bucket", f.v.labels, c.values, "le", le, float64(n))
		}
		writeSample(w, f.name, "_sum", f.v.labels, c.values, "", "", sum)
		writeSample(w, f.name, "_count", f.v.labels, c.values, "", "", float64(cum[len(cum)-1]))
	}
}

// writeSample writes `name{l1="v1",...,extra="extraValue"} value`.
func writeSample(w *bufio.Writer, name, suffix string, labels, values []string, extra, extraValue string, v float64) {
	w.WriteString(name)
	w.WriteString(suffix)
	if len(labels) > 0 || extra != "" {
		w.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString(l)
			w.WriteString(`="`)
			w.WriteString(escapeLabelValue(values[i]))
			w.WriteByte('"')
		}
		if extra != "" {
			if len(labels) > 0 {
				w.WriteByte(',')
			}
			w.WriteString(extra)
			w.WriteString(`="`)
			w.WriteString(extraValue)
			w.WriteByte('"')
		}
		w.WriteByte('}')
	}
	w.WriteByte(' ')
	w.WriteString(formatFloat(v))
	w.WriteByte('\n')
}

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func escapeHelp(s string) string { return helpEscaper.Replace(strings.ToValidUTF8(s, "\uFFFD")) }

// escapeLabelValue also replaces invalid UTF-8, which the format forbids.
func escapeLabelValue(s string) string { return labelEscaper.Replace(strings.ToValidUTF8(s, "\uFFFD")) }

func validate(name string, labels []string, histogram bool) error {
	if !validName(name, true) {
		return fmt.Errorf("%w: name %q must match [a-zA-Z_:][a-zA-Z0-9_:]*", ErrInvalid, name)
	}
	seen := make(map[string]bool, len(labels))
	for _, l := range labels {
		switch {
		case !validName(l, false):
			return fmt.Errorf("%w: %s: label name %q must match [a-zA-Z_][a-zA-Z0-9_]*", ErrInvalid, name, l)
		case strings.HasPrefix(l, "__"):
			return fmt.Errorf("%w: %s: label name %q is reserved (leading __)", ErrInvalid, name, l)
		case histogram && l == "le":
			return fmt.Errorf("%w: %s: label name \"le\" is reserved for histogram buckets", ErrInvalid, name)
		case seen[l]:
			return fmt.Errorf("%w: %s: label name %q given twice", ErrInvalid, name, l)
		}
		seen[l] = true
	}
	return nil
}

func validName(s string, colon bool) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		ok := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') ||
			(i > 0 && r >= '0' && r <= '9') || (colon && r == ':')
		if !ok {
			return false
		}
	}
	return true
}

func validateBuckets(name string, b []float64) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: %s: a histogram needs at least one finite bucket bound", ErrInvalid, name)
	}
	for i, v := range b {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: %s: bucket bound %d is %v; bounds must be finite (+Inf is implicit)", ErrInvalid, name, i, v)
		}
		if i > 0 && v <= b[i-1] {
			return fmt.Errorf("%w: %s: bucket bounds must increase strictly, but %v follows %v", ErrInvalid, name, v, b[i-1])
		}
	}
	return nil
}
