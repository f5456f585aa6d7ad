package cluster

import "testing"

func TestIncarnationGone(t *testing.T) {
	in := func(addrs ...string) func(string) bool {
		return func(a string) bool {
			for _, x := range addrs {
				if x == a {
					return true
				}
			}
			return false
		}
	}
	for _, tc := range []struct {
		name string
		top  func(string) bool
		left map[string]bool
		want bool
	}{
		{"still there", in("h:1", "h:2"), nil, false},
		{"another member left", in("h:1"), map[string]bool{"h:2": true}, false},
		{"left the topology", in("h:2"), nil, true},
		{"restarted on the same address (fixed port)", in("h:1", "h:2"), map[string]bool{"h:1": true}, true},
	} {
		if got := incarnationGone("h:1", tc.top, tc.left); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
