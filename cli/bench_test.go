package cli

import (
	"testing"

	"github.com/sessionrt/sessionrt/bench/driver"
)

func TestParseLevelsReadsSessionsByTurns(t *testing.T) {
	got, err := parseLevels("10x5, 500x1")
	if err != nil || len(got) != 2 || got[0] != (driver.Level{Sessions: 10, Turns: 5}) || got[1] != (driver.Level{Sessions: 500, Turns: 1}) {
		t.Fatalf("%+v %v", got, err)
	}
	for _, bad := range []string{"", "10", "0x5", "10x0", "ax1", "10x5,"} {
		if _, err := parseLevels(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
