package metrics

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrInvalid is wrapped by every error about a bad metric name, label or bucket
// layout, and by label-value arity mismatches.
var ErrInvalid = errors.New("invalid metric")

// ErrDuplicate is wrapped when a metric name is registered twice in one Registry.
var ErrDuplicate = errors.New("duplicate metric")

// Counter is a monotonically increasing value. The zero value is ready to use
// but only a Counter obtained from a Registry is exposed.
type Counter struct{ bits atomic.Uint64 }

// Inc adds one.
func (c *Counter) Inc() { c.Add(1) }

// Add adds v. Negative, NaN and infinite values are ignored: a counter never
// goes down, and one bad observation must not poison the series.
func (c *Counter) Add(v float64) {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	addFloat(&c.bits, v)
}

// Value returns the current value.
func (c *Counter) Value() float64 { return math.Float64frombits(c.bits.Load()) }

// Gauge is a value that goes up and down.
type Gauge struct{ bits atomic.Uint64 }

// Set sets the gauge to v.
func (g *Gauge) Set(v float64) { g.bits.Store(math.Float64bits(v)) }

// Add adds v (which may be negative).
func (g *Gauge) Add(v float64) { addFloat(&g.bits, v) }

// Inc adds one.
func (g *Gauge) Inc() { g.Add(1) }

// Dec subtracts one.
func (g *Gauge) Dec() { g.Add(-1) }

// Value returns the current value.
func (g *Gauge) Value() float64 { return math.Float64frombits(g.bits.Load()) }

// Histogram counts observations into fixed buckets and keeps their sum.
type Histogram struct {
	upper  []float64       // finite upper bounds, strictly increasing; +Inf is implicit
	counts []atomic.Uint64 // non-cumulative, len(upper)+1 (last is the +Inf bucket)
	sum    atomic.Uint64   // float64 bits
}

func newHistogram(upper []float64) *Histogram {
	return &Histogram{upper: upper, counts: make([]atomic.Uint64, len(upper)+1)}
}

// Observe records one value. NaN is ignored.
func (h *Histogram) Observe(v float64) {
	if math.IsNaN(v) {
		return
	}
	// Buckets are "less than or equal": the first bound >= v.
	i, _ := slices.BinarySearch(h.upper, v)
	h.counts[i].Add(1)
	addFloat(&h.sum, v)
}

// ObserveDuration records d in seconds, the Prometheus base unit.
func (h *Histogram) ObserveDuration(d time.Duration) { h.Observe(d.Seconds()) }

// Count returns the number of observations.
func (h *Histogram) Count() uint64 {
	var n uint64
	for i := range h.counts {
		n += h.counts[i].Load()
	}
	return n
}

// Sum returns the sum of the observations.
func (h *Histogram) Sum() float64 { return math.Float64frombits(h.sum.Load()) }

// snapshot returns cumulative bucket counts (the last one is +Inf, equal to
// the total count) and the sum. The count is derived from the buckets so that
// the +Inf bucket and _count always agree even while observations race in.
func (h *Histogram) snapshot() (cumulative []uint64, sum float64) {
	cumulative = make([]uint64, len(h.counts))
	var n uint64
	for i := range h.counts {
		n += h.counts[i].Load()
		cumulative[i] = n
	}
	return cumulative, h.Sum()
}

func addFloat(bits *atomic.Uint64, v float64) {
	for {
		old := bits.Load()
		next := math.Float64bits(math.Float64frombits(old) + v)
		if bits.CompareAndSwap(old, next) {
			return
		}
	}
}

// vec holds the children of one labelled family, keyed by their label values.
type vec[T any] struct {
	labels   []string
	newChild func() *T
	mu       sync.RWMutex
	children map[string]*child[T]
}

type child[T any] struct {
	values []string
	m      *T
}

func newVec[T any](labels []string, newChild func() *T) *vec[T] {
	return &vec[T]{labels: labels, newChild: newChild, children: make(map[string]*child[T])}
}

func (v *vec[T]) with(name string, values []string) (*T, error) {
	if len(values) != len(v.labels) {
		return nil, fmt.Errorf("%w: %s takes %d label values (%s), got %d",
			ErrInvalid, name, len(v.labels), strings.Join(v.labels, ", "), len(values))
	}
	// Build the key on the stack: the lookup of an existing child, the hot
	// path, then allocates nothing (m[string(b)] does not copy).
	var buf [128]byte
	key := buf[:0]
	for _, s := range values {
		// Length-prefixed, so no choice of values can collide.
		key = binary.AppendUvarint(key, uint64(len(s)))
		key = append(key, s...)
	}
	v.mu.RLock()
	c, ok := v.children[string(key)]
	v.mu.RUnlock()
	if ok {
		return c.m, nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if c, ok := v.children[string(key)]; ok {
		return c.m, nil
	}
	c = &child[T]{values: slices.Clone(values), m: v.newChild()}
	v.children[string(key)] = c
	return c.m, nil
}

// sorted returns the children ordered by label values, for a stable exposition.
func (v *vec[T]) sorted() []*child[T] {
	v.mu.RLock()
	out := make([]*child[T], 0, len(v.children))
	for _, c := range v.children {
		out = append(out, c)
	}
	v.mu.RUnlock()
	slices.SortFunc(out, func(a, b *child[T]) int { return slices.Compare(a.values, b.values) })
	return out
}

// CounterVec is a family of counters split by label values.
type CounterVec struct {
	name string
	v    *vec[Counter]
}

// With returns the counter for the given label values (in the order the labels
// were declared), creating it at zero on first use.
func (c *CounterVec) With(values ...string) (*Counter, error) { return c.v.with(c.name, values) }

// GaugeVec is a family of gauges split by label values.
type GaugeVec struct {
	name string
	v    *vec[Gauge]
}

// With returns the gauge for the given label values, creating it at zero.
func (g *GaugeVec) With(values ...string) (*Gauge, error) { return g.v.with(g.name, values) }

// HistogramVec is a family of histograms with one bucket layout, split by label values.
type HistogramVec struct {
	name string
	v    *vec[Histogram]
}

// With returns the histogram for the given label values, creating it empty.
func (h *HistogramVec) With(values ...string) (*Histogram, error) { return h.v.with(h.name, values) }

// LatencyBuckets are upper bounds in seconds suited to in-process and
// database latencies: 50 µs to 10 s.
func LatencyBuckets() []float64 {
	return []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
}
