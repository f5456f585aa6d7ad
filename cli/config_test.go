package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigShowPrintsEachValueWithItsFile(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("OPENCODE_CONFIG", "")
	global := filepath.Join(home, ".config", "opencode", "opencode.json")
	if err := os.MkdirAll(filepath.Dir(global), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(global, []byte(`{"model": "openai/gpt-4.1", "username": "me"}`), 0o644)
	local := filepath.Join(proj, "opencode.jsonc")
	os.WriteFile(local, []byte("{\n  // mine\n  \"model\": \"anthropic/claude-sonnet-4-5\",\n}\n"), 0o644)

	var out, errb bytes.Buffer
	if code := run([]string{"config", "show", "--dir", proj}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{
		"// 1. " + global, "// 2. " + local,
		`"model": "anthropic/claude-sonnet-4-5", // ` + local + ":3:12",
		`"username": "me" // ` + global + ":1:41",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	// A malformed file: exit 1 and file:line:col on stderr.
	os.WriteFile(local, []byte("{\n  \"model\": \"a/b\"\n  \"x\": 1\n}\n"), 0o644)
	out.Reset()
	errb.Reset()
	if code := run([]string{"config", "show", "--dir", proj}, &out, &errb); code != 1 || !strings.Contains(errb.String(), local+":3:3: ") {
		t.Fatalf("malformed file: exit %d, stderr %q", code, errb.String())
	}
}
