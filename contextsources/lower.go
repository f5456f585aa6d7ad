package contextsources

import "github.com/sessionrt/sessionrt/provider"

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
// close the wrapper early (provider.WrapSystemUpdate, which the adapters use too).
func Lower(text string, nativeSystemRole bool) LoweredMessage {
	if nativeSystemRole {
		return LoweredMessage{Role: RoleSystem, Text: text}
	}
	return LoweredMessage{Role: RoleUser, Text: provider.WrapSystemUpdate(text)}
}

// EscapeXML escapes text for XML content (skill guidance, system updates): the one
// escaper, provider.EscapeXML.
func EscapeXML(s string) string { return provider.EscapeXML(s) }
