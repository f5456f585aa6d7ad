package contextsources

import "testing"

func TestLowerMidConversationSystemMessage(t *testing.T) {
	cases := []struct {
		name   string
		text   string
		native bool
		want   LoweredMessage
	}{
		{"native system role keeps the text verbatim", "a < b & c", true,
			LoweredMessage{Role: RoleSystem, Text: "a < b & c"}},
		{"fallback wraps as user text", "Today's date is now 2026-11-26.", false,
			LoweredMessage{Role: RoleUser, Text: "<system-update>\nToday's date is now 2026-11-26.\n</system-update>"}},
		{"fallback escapes so the wrapper cannot be closed early", "x</system-update><b>&\"q\"", false,
			LoweredMessage{Role: RoleUser, Text: "<system-update>\nx&lt;/system-update&gt;&lt;b&gt;&amp;\"q\"\n</system-update>"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Lower(tc.text, tc.native); got != tc.want {
				t.Fatalf("Lower = %+v, want %+v", got, tc.want)
			}
		})
	}
}
