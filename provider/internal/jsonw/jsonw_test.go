package jsonw

import (
	"encoding/json"
	"testing"
)

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{
		"", "plain", `quo"te`, `back\slash`, "nl\nret\rtab\t", "\x00\x01\x1f\x7f", "ünïcødé ✓ 𝄞",
		"bad \xff utf8 \xc3", "line\u2028sep\u2029", "<html>&amp;</html>",
	} {
		got := AppendString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%q encoded to invalid JSON %s: %v", s, got, err)
		}
		want, _ := json.Marshal(s)
		var wantBack string
		json.Unmarshal(want, &wantBack)
		if back != wantBack {
			t.Errorf("%q round-trips to %q, encoding/json to %q", s, back, wantBack)
		}
	}
}

func TestWriterNestsCommasCorrectly(t *testing.T) {
	var w Writer
	w.Open('{')
	w.Key("a")
	w.Open('[')
	w.Int(1)
	w.Str("x")
	w.Open('{')
	w.Close('}')
	w.Null()
	w.Close(']')
	w.Key("b")
	w.Bool(true)
	w.Key("c")
	w.Raw([]byte(`{"d":1.5}`))
	w.Key("e")
	w.Float(0.25)
	w.Close('}')
	if got, want := string(w.B), `{"a":[1,"x",{},null],"b":true,"c":{"d":1.5},"e":0.25}`; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestAppendStringWordAtATimeFindsEveryEscapeLane(t *testing.T) {
	for _, special := range []string{"\"", "\\", "\n", "\x00", "\x1f", "é", "\u2028", "\xff"} {
		for pos := 0; pos < 24; pos++ {
			s := "abcdefghijklmnopqrstuvwxyz"[:pos] + special + "abcdefghijklmnop"
			var back string
			if err := json.Unmarshal(AppendString(nil, s), &back); err != nil {
				t.Fatalf("%q: %v", s, err)
			}
			want, _ := json.Marshal(s)
			var wantBack string
			json.Unmarshal(want, &wantBack)
			if back != wantBack {
				t.Fatalf("%q round-trips to %q, want %q", s, back, wantBack)
			}
		}
	}
}
