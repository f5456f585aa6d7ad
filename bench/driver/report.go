package driver

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// Row is one line of the comparison: a figure of sessionrt and of the peer.
type Row struct {
	Name   string    `json:"name"`
	Unit   string    `json:"unit"`
	Higher bool      `json:"higher_is_better"`
	Values []float64 `json:"values"` // one per system, in Report.Systems order
	// Ratio is how many times better the first system is than the second
	// (>1: the first is better); 0 without a second system.
	Ratio float64 `json:"ratio,omitempty"`
}

// Report is what `sessionrt bench` prints and writes.
type Report struct {
	Systems []string `json:"systems"`
	Rows    []Row    `json:"rows"`
	// Notes qualify figures (a throughput step cut short).
	Notes   []string `json:"notes,omitempty"`
	Results []Result `json:"results"`
}

// Compare builds the table from one result per system (the first is
// sessionrt). Levels are matched by session count.
func Compare(results ...Result) Report {
	r := Report{Results: results}
	for _, res := range results {
		r.Systems = append(r.Systems, res.System)
	}
	add := func(name, unit string, higher bool, f func(Result) (float64, bool)) {
		row := Row{Name: name, Unit: unit, Higher: higher}
		for _, res := range results {
			v, ok := f(res)
			if !ok {
				return
			}
			row.Values = append(row.Values, v)
		}
		if len(row.Values) == 2 && row.Values[0] > 0 && row.Values[1] > 0 {
			if higher {
				row.Ratio = row.Values[0] / row.Values[1]
			} else {
				row.Ratio = row.Values[1] / row.Values[0]
			}
		}
		r.Rows = append(r.Rows, row)
	}
	always := func(f func(Result) float64) func(Result) (float64, bool) {
		return func(res Result) (float64, bool) { return f(res), true }
	}
	add("start-up to first answer", "s", false, always(func(x Result) float64 { return x.StartupSeconds }))
	add("single-session latency p50", "ms", false, always(func(x Result) float64 { return x.Latency.P50 }))
	add("single-session latency p90", "ms", false, always(func(x Result) float64 { return x.Latency.P90 }))
	add("single-session latency p99", "ms", false, always(func(x Result) float64 { return x.Latency.P99 }))
	if len(results) > 0 {
		for _, lv := range results[0].Throughput {
			find := func(x Result) (LevelResult, bool) {
				for _, l := range x.Throughput {
					if l.Sessions == lv.Sessions {
						return l, true
					}
				}
				return LevelResult{}, false
			}
			cut := ""
			for _, x := range results {
				if l, ok := find(x); ok && l.Partial {
					cut = " (cut short: see note)"
					n := fmt.Sprintf("%s, %d sessions: cut short after %.0fs with %d of %d turns done; the rate is over those turns", x.System, l.Sessions, l.Seconds, l.Completed, l.Sessions*l.Turns)
					if l.Failed > 0 {
						n += fmt.Sprintf("; %d turns failed, the first: %s", l.Failed, l.FirstError)
					}
					r.Notes = append(r.Notes, n)
				}
			}
			add(fmt.Sprintf("throughput, %d sessions%s", lv.Sessions, cut), "turns/s", true, func(x Result) (float64, bool) {
				l, ok := find(x)
				return l.TurnsPerSec, ok
			})
			add(fmt.Sprintf("turn p50, %d sessions%s", lv.Sessions, cut), "ms", false, func(x Result) (float64, bool) {
				l, ok := find(x)
				return l.Latency.P50, ok
			})
		}
	}
	add("server CPU per turn", "ms", false, always(func(x Result) float64 { return x.CPUPerTurn }))
	add("peak RSS", "MB", false, always(func(x Result) float64 { return float64(x.PeakRSS) / (1 << 20) }))
	add("RSS after the run", "MB", false, always(func(x Result) float64 { return float64(x.RSSAfter) / (1 << 20) }))
	add("  of it file-backed", "MB", false, always(func(x Result) float64 { return float64(x.RSSAfterFile) / (1 << 20) }))
	add("  of that the executable", "MB", false, always(func(x Result) float64 { return float64(x.RSSAfterExe) / (1 << 20) }))
	return r
}

// Print writes the table.
func (r Report) Print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"", "unit"}
	head = append(head, r.Systems...)
	if len(r.Systems) == 2 {
		head = append(head, r.Systems[0]+" better by")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, row := range r.Rows {
		cells := []string{row.Name, row.Unit}
		for _, v := range row.Values {
			cells = append(cells, format(v))
		}
		if len(r.Systems) == 2 {
			if row.Ratio > 0 {
				cells = append(cells, fmt.Sprintf("%.1f×", row.Ratio))
			} else {
				cells = append(cells, "-")
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range r.Notes {
		if _, err := fmt.Fprintf(w, "note: %s\n", n); err != nil {
			return err
		}
	}
	return nil
}

func format(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// Write saves bench.json and bench.png (the chart) in dir.
func (r Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "bench.json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write bench.json: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, "bench.png"))
	if err != nil {
		return fmt.Errorf("write bench.png: %w", err)
	}
	if err := r.Chart(f); err != nil {
		f.Close()
		return fmt.Errorf("draw bench.png: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write bench.png: %w", err)
	}
	return nil
}
