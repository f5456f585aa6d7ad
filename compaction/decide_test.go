package compaction

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestNeededComparesEstimateWithWindowMinusReserve(t *testing.T) {
	def := DefaultConfig()
	off := def
	off.Auto = false
	cases := []struct {
		name                        string
		estimate, window, allowance int
		cfg                         Config
		want                        bool
	}{
		{"under budget, buffer reserve", 79_999, 100_000, 4_000, def, false},
		{"at budget is not over", 80_000, 100_000, 4_000, def, false},
		{"over budget, buffer reserve", 80_001, 100_000, 4_000, def, true},
		{"output allowance larger than buffer", 70_001, 100_000, 30_000, def, true},
		{"output allowance larger than buffer, under", 70_000, 100_000, 30_000, def, false},
		{"unknown window never compacts", 10_000_000, 0, 4_000, def, false},
		{"auto off never compacts", 99_000, 100_000, 4_000, off, false},
		{"custom buffer", 95_001, 100_000, 0, Config{Auto: true, Buffer: 5_000}, true},
		{"zero buffer means default", 80_001, 100_000, 0, Config{Auto: true}, true},
		{"window smaller than reserve", 1, 10_000, 0, def, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Needed(c.estimate, c.window, c.allowance, c.cfg); got != c.want {
				t.Fatalf("Needed(%d, %d, %d, %+v) = %v, want %v", c.estimate, c.window, c.allowance, c.cfg, got, c.want)
			}
		})
	}
}

func TestBeforeTurnCompactsAtMostOncePerTurn(t *testing.T) {
	cfg := DefaultConfig()
	over := TurnState{Estimate: 90_000, Window: 100_000, OutputAllowance: 4_000}
	if d := BeforeTurn(over, cfg); d.Action != Compact || d.Err != nil {
		t.Fatalf("over budget: %v %v, want compact", d.Action, d.Err)
	}
	over.Compacted = true
	if d := BeforeTurn(over, cfg); d.Action != Proceed {
		t.Fatalf("over budget after a compaction of this turn: %v, want proceed (an overflow then is terminal)", d.Action)
	}
	if d := BeforeTurn(TurnState{Estimate: 10, Window: 100_000}, cfg); d.Action != Proceed {
		t.Fatalf("under budget: %v, want proceed", d.Action)
	}
	cfg.Auto = false
	if d := BeforeTurn(TurnState{Estimate: 90_000, Window: 100_000}, cfg); d.Action != Proceed {
		t.Fatalf("auto off: %v, want proceed", d.Action)
	}
}

func TestOnOverflowRetriesOnceBeforeOutputOnly(t *testing.T) {
	on, off := DefaultConfig(), DefaultConfig()
	off.Auto = false
	cases := []struct {
		name    string
		state   OverflowState
		cfg     Config
		want    Action
		errText string
	}{
		{"first overflow before output compacts", OverflowState{}, on, Compact, ""},
		{"second overflow of the turn is terminal", OverflowState{Compacted: true}, on, Fail, "after a compaction"},
		{"overflow after durable output is terminal", OverflowState{DurableOutput: true}, on, Fail, "already recorded output"},
		{"output and compaction: output wins the message", OverflowState{DurableOutput: true, Compacted: true}, on, Fail, "already recorded output"},
		{"auto off is an explicit error", OverflowState{}, off, Fail, "compaction.auto is false"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := OnOverflow(c.state, c.cfg)
			if d.Action != c.want {
				t.Fatalf("action %v, want %v", d.Action, c.want)
			}
			if c.errText == "" {
				if d.Err != nil {
					t.Fatalf("unexpected error %v", d.Err)
				}
				return
			}
			if !errors.Is(d.Err, ErrOverflow) || !strings.Contains(d.Err.Error(), c.errText) {
				t.Fatalf("error %v, want ErrOverflow mentioning %q", d.Err, c.errText)
			}
		})
	}
}

func TestOnOverflowNeverLoops(t *testing.T) {
	// Drive the rule as the drain would: every attempt overflows. The turn
	// must end in a terminal error after exactly one compaction.
	cfg := DefaultConfig()
	var s OverflowState
	compactions := 0
	for attempt := 0; attempt < 10; attempt++ {
		d := OnOverflow(s, cfg)
		if d.Action == Fail {
			if compactions != 1 || attempt != 1 {
				t.Fatalf("failed at attempt %d after %d compactions, want attempt 1 after 1", attempt, compactions)
			}
			return
		}
		compactions++
		s.Compacted = true
	}
	t.Fatal("overflow rule looped")
}

func TestConfigJSONKeepsDefaultsForAbsentKeys(t *testing.T) {
	cases := []struct {
		in   string
		want Config
	}{
		{`{}`, Config{Auto: true, Buffer: 20000, Keep: 8000}},
		{`{"auto": false}`, Config{Auto: false, Buffer: 20000, Keep: 8000}},
		{`{"buffer": 30000, "keep": 2000}`, Config{Auto: true, Buffer: 30000, Keep: 2000}},
	}
	for _, c := range cases {
		var got Config
		if err := json.Unmarshal([]byte(c.in), &got); err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if got != c.want {
			t.Fatalf("%s: got %+v, want %+v", c.in, got, c.want)
		}
	}
	for _, bad := range []string{`{"buffer": -1}`, `{"keep": -5}`, `{"auto": "yes"}`} {
		var got Config
		err := json.Unmarshal([]byte(bad), &got)
		if err == nil || !strings.Contains(err.Error(), "compaction config") {
			t.Fatalf("%s: error %v, want a compaction config error", bad, err)
		}
	}
	// The section round-trips.
	b, _ := json.Marshal(DefaultConfig())
	if string(b) != `{"auto":true,"buffer":20000,"keep":8000}` {
		t.Fatalf("marshal: %s", b)
	}
}

func TestOutputAllowancePrefersTheRequestLimit(t *testing.T) {
	if got := OutputAllowance(1000, 64000); got != 1000 {
		t.Fatalf("got %d", got)
	}
	if got := OutputAllowance(0, 64000); got != 64000 {
		t.Fatalf("got %d", got)
	}
	if got := OutputAllowance(0, 0); got != 0 {
		t.Fatalf("got %d", got)
	}
}
