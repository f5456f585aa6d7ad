package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func sample(name string, k float64) Result {
	return Result{System: name, StartupSeconds: 0.5 * k, Latency: Latency{Runs: 30, P50: 10 * k, P90: 12 * k, P99: 15 * k},
		Throughput: []LevelResult{{Level: Level{Sessions: 10, Turns: 5}, TurnsPerSec: 100 / k, Latency: Latency{P50: 20 * k}}},
		CPUPerTurn: 3 * k, PeakRSS: 100 << 20, RSSAfter: 80 << 20}
}

// The ratio says how many times better the first system is, in the right
// direction for each row.
func TestCompareRatiosFavourTheFirstSystemInTheRowsDirection(t *testing.T) {
	r := Compare(sample("sessionrt", 1), sample("opencode", 4))
	byName := map[string]Row{}
	for _, row := range r.Rows {
		byName[row.Name] = row
	}
	for name, want := range map[string]float64{"single-session latency p50": 4, "throughput, 10 sessions": 4, "server CPU per turn": 4, "peak RSS": 1} {
		if got := byName[name].Ratio; got < want-1e-9 || got > want+1e-9 {
			t.Errorf("%s: ratio %v, want %v", name, got, want)
		}
	}
	var out bytes.Buffer
	if err := r.Print(&out); err != nil || !strings.Contains(out.String(), "4.0×") {
		t.Fatalf("table lacks the ratio: %v\n%s", err, out.String())
	}
}

func TestWriteSavesJSONAndAChart(t *testing.T) {
	dir := t.TempDir()
	r := Compare(sample("sessionrt", 1), sample("opencode", 2))
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "bench.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil || len(back.Rows) != len(r.Rows) || back.Systems[1] != "opencode" {
		t.Fatalf("bench.json did not round-trip: %v %+v", err, back.Systems)
	}
	f, err := os.Open(filepath.Join(dir, "bench.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil || img.Bounds().Dy() < len(r.Rows)*20 {
		t.Fatalf("bench.png: %v, bounds %v", err, img.Bounds())
	}
}

// A step cut short by the level timeout is rated over the turns that
// finished, and the table says so beside the row and in a note.
func TestCutShortStepIsRatedOverFinishedTurnsAndNoted(t *testing.T) {
	lr := levelResult(Level{Sessions: 500, Turns: 1}, 2*time.Second, []time.Duration{time.Second, time.Second, time.Second, time.Second})
	if !lr.Partial || lr.Completed != 4 || lr.TurnsPerSec != 2 {
		t.Fatalf("level %+v, want partial, 4 turns at 2/s", lr)
	}
	whole := levelResult(Level{Sessions: 2, Turns: 1}, time.Second, []time.Duration{time.Second, time.Second})
	if whole.Partial || whole.note() != "" {
		t.Fatalf("a finished step is not partial: %+v", whole)
	}
	a, b := sample("sessionrt", 1), sample("opencode", 2)
	a.Throughput = append(a.Throughput, levelResult(Level{Sessions: 500, Turns: 1}, time.Second, make([]time.Duration, 500)))
	b.Throughput = append(b.Throughput, lr)
	r := Compare(a, b)
	var out bytes.Buffer
	if err := r.Print(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"throughput, 500 sessions (cut short: see note)", "note: opencode, 500 sessions: cut short after 2s with 4 of 500 turns done"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	lr.Failed, lr.FirstError = 3, "the session stopped running"
	if n := lr.note(); !strings.Contains(n, "4 of 500 turns; 3 failed, the first: the session stopped running") {
		t.Errorf("note %q does not count the failed turns", n)
	}
	if !strings.Contains(out.String(), "throughput, 10 sessions  ") && strings.Contains(out.String(), "10 sessions (cut") {
		t.Errorf("a whole step is marked cut short:\n%s", out.String())
	}
}

// Every character of the chart's row labels and legend has a glyph, so
// the PNG reads without the table.
func TestChartFontCoversTheLabels(t *testing.T) {
	a, b := sample("sessionrt", 1), sample("opencode", 2)
	b.Throughput[0].Partial = true
	r := Compare(a, b)
	text := strings.Join(r.Systems, " ")
	for _, row := range r.Rows {
		text += fmt.Sprintf(" %s, %s: better by %.1fx", row.Name, row.Unit, row.Ratio)
	}
	for _, ch := range strings.ToUpper(text) {
		if _, ok := glyphs[ch]; !ok && ch != ' ' {
			t.Errorf("no glyph for %q", ch)
		}
	}
}

// sessionrt serve gets the pprof variable only when the run profiles.
func TestSessionrtServesPprofOnlyWhenAsked(t *testing.T) {
	has := func(s Setup) bool {
		cmd, err := Sessionrt{Binary: "/bin/true"}.Command(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range cmd.Env {
			if strings.HasPrefix(kv, PprofEnv+"=") {
				return kv == PprofEnv+"="+s.PprofAddr
			}
		}
		return false
	}
	if has(Setup{Dir: "/d", Addr: "127.0.0.1:1"}) {
		t.Error("pprof served without PprofAddr")
	}
	if !has(Setup{Dir: "/d", Addr: "127.0.0.1:1", PprofAddr: "127.0.0.1:2"}) {
		t.Error("pprof not served at PprofAddr")
	}
}

func TestParseStatusReadsRSSPeakAndFileBacked(t *testing.T) {
	m, err := parseStatus(1, []byte("Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nRssAnon:\t 512 kB\nRssFile:\t 256 kB\n"))
	if err != nil || m.peak != 2<<20 || m.rss != 1<<20 || m.file != 256<<10 {
		t.Fatalf("%+v %v", m, err)
	}
	if _, err := parseStatus(1, []byte("VmRSS:\tlots kB\n")); err == nil {
		t.Fatal("a malformed VmRSS was accepted")
	}
}

func TestMappedRSSSumsTheExecutablesMappings(t *testing.T) {
	smaps := `00400000-01c19000 r-xp 00000000 fd:00 123 /work/bin/srt new
Size:              24676 kB
Rss:               21656 kB
01c19000-039ad000 r--p 01819000 fd:00 123 /work/bin/srt new
Rss:               21004 kB
039ad000-0518c000 rw-p 035ad000 fd:00 123 /work/bin/srt new
Rss:                3260 kB
0518c000-05200000 rw-p 00000000 00:00 0 
Rss:                 100 kB
7f7688000000-7f7888000000 rw-s 00000000 fd:00 456 /data/journal.bolt
Rss:                7012 kB
VmFlags: rd wr sh mr mw me ms sd
`
	n, err := mappedRSS([]byte(smaps), "/work/bin/srt new")
	if err != nil || n != (21656+21004+3260)<<10 {
		t.Fatalf("%d %v", n, err)
	}
	if _, err := mappedRSS([]byte("00400000-01c19000 r-xp 0 fd:00 1 /x\nRss: many kB\n"), "/x"); err == nil {
		t.Fatal("a malformed Rss was accepted")
	}
}
