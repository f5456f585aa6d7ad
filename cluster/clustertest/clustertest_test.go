package clustertest

import "testing"

func TestSessionOfMarkerReadsTheSessionOutOfACallID(t *testing.T) {
	for marker, want := range map[string]string{
		"call_ses_mk_007_4242_3": "ses_mk_007",
		"call_s_1_2":             "s",
		"call_x":                 "",
	} {
		if got := SessionOfMarker(marker); got != want {
			t.Errorf("SessionOfMarker(%q) = %q, want %q", marker, got, want)
		}
	}
}
