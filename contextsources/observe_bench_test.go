package contextsources_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sessionrt/sessionrt/contextsources"
	"github.com/sessionrt/sessionrt/contextsources/environment"
	"github.com/sessionrt/sessionrt/contextsources/instructions"
)

// BenchmarkObserveBuiltins is one provider-turn boundary of a Location with the node's
// built-in contributions (environment + date, instructions), five directories below a
// git root holding an AGENTS.md.
func BenchmarkObserveBuiltins(b *testing.B) {
	root := b.TempDir()
	dir := filepath.Join(root, "a", "b", "c", "d", "e")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "AGENTS.md"), []byte("Be brief.\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	reg := contextsources.NewRegistry(contextsources.RegistryConfig{})
	for key, mk := range map[string]func(string) (contextsources.SystemContext, error){
		"core/environment": environment.Context, "core/instructions": instructions.Context,
	} {
		sc, err := mk(dir)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := reg.Register(key, sc); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		obs, err := reg.Observe(ctx)
		if err != nil || len(obs.Unavailable()) > 0 {
			b.Fatal(err, obs.Unavailable())
		}
	}
}
