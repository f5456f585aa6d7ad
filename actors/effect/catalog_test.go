package effect

import (
	"encoding/json"
	"testing"

	"github.com/sessionrt/sessionrt/toolactors"
	"github.com/sessionrt/sessionrt/toolactors/tools"
)

// builtinCatalog is the catalog the registry sends for the built-in tools.
func builtinCatalog() *toolactors.Catalog {
	cat := &toolactors.Catalog{}
	for _, t := range tools.Builtins(tools.Config{}) {
		cat.Tools = append(cat.Tools, t.Definition())
	}
	return cat
}

// The schemas sent to the provider are the JSON encoding of each tool's declared input.
func TestLowerCatalogSchemas(t *testing.T) {
	cat := builtinCatalog()
	cat.Tools = append(cat.Tools, tools.Definition{Name: "bare", Description: "no input"})
	got, err := lowerCatalog(cat)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(cat.Tools) {
		t.Fatalf("%d tools lowered, want %d", len(got), len(cat.Tools))
	}
	for i, d := range cat.Tools {
		want := []byte(`{"type":"object"}`)
		if d.Input != nil {
			want, _ = json.Marshal(d.Input)
		}
		if got[i].Name != d.Name || got[i].Description != d.Description || string(got[i].Schema) != string(want) {
			t.Errorf("tool %d = %s %q %s, want %s %q %s", i, got[i].Name, got[i].Description, got[i].Schema, d.Name, d.Description, want)
		}
	}
}

// BenchmarkCatalogLowering is a turn's catalog work: the registry asks every tool for its
// definition, the session lowers them to provider tools.
func BenchmarkCatalogLowering(b *testing.B) {
	builtins := tools.Builtins(tools.Config{})
	b.ReportAllocs()
	for b.Loop() {
		cat := &toolactors.Catalog{}
		for _, t := range builtins {
			cat.Tools = append(cat.Tools, t.Definition())
		}
		if _, err := lowerCatalog(cat); err != nil {
			b.Fatal(err)
		}
	}
}
