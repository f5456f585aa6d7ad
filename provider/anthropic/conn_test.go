package anthropic

import (
	"net/http"
	"path/filepath"
	"testing"

	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/internal/conntest"
)

// The session's pump stops at the finish part and closes the stream, often
// before the body's chunked terminator arrived; the stream must still hand
// its connection back for the next turn instead of closing it.
func TestTurnsAfterAFinishedStreamReuseTheConnection(t *testing.T) {
	conntest.TurnsReuseTheConnection(t, conntest.Reuse{
		Transcript: filepath.Join("testdata", "text.sse"),
		Request:    basicRequest(),
		Open: func(t *testing.T, url string, client *http.Client) provider.Provider {
			a, err := New(Config{BaseURL: url, APIKey: "sk-ant-test", HTTPClient: client})
			if err != nil {
				t.Fatal(err)
			}
			return a
		},
		Drained: func(s provider.Stream) <-chan struct{} { return s.(*stream).Drained() },
	})
}
