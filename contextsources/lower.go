package contextsources

import "strings"

// Role is the provider message role a Mid-Conversation System Message lowers to.
type Role string

const (
	// RoleSystem: the provider's native chronological instruction role.
	RoleSystem Role = "system"
	// RoleUser: the wrapped fallback for providers without one.
	RoleUser Role = "user"
)

// LoweredMessage is a Mid-Conversation System Message as a provider request entry.
type LoweredMessage struct {
	Role Role
	Text string
}

// Lower turns the stored message text into what one provider turn sends: the text itself
// in the system role when the provider has a native chronological system role, otherwise
// user text "<system-update>…</system-update>" with the text XML-escaped so it cannot
// close the wrapper early.
func Lower(text string, nativeSystemRole bool) LoweredMessage {
	if nativeSystemRole {
		return LoweredMessage{Role: RoleSystem, Text: text}
	}
	return LoweredMessage{Role: RoleUser, Text: "<system-update>\n" + EscapeXML(text) + "\n</system-update>"}
}

// EscapeXML escapes the three characters that matter in XML text content, leaving
// quotes and newlines readable for the model.
func EscapeXML(s string) string {
	if !strings.ContainsAny(s, "&<>") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
