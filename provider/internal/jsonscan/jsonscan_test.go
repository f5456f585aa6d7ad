package jsonscan

import (
	"encoding/json"
	"testing"
)

// skipAgrees checks that Skip accepts exactly what encoding/json accepts.
func skipAgrees(t *testing.T, src string) {
	t.Helper()
	var s Scanner
	s.Reset([]byte(src))
	err := s.Skip()
	if err == nil {
		err = s.End()
	}
	if (err == nil) != json.Valid([]byte(src)) {
		t.Errorf("%q: jsonscan valid=%v, encoding/json valid=%v", src, err == nil, json.Valid([]byte(src)))
	}
}

func TestSkipValidatesLikeEncodingJSON(t *testing.T) {
	docs := []string{
		`{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"a\"b\\n\u00e9\ud83d\ude00"},"finish_reason":null}],"usage":null}`,
		`{"a":[1,-2,3.5e10,0,-0.0e-1,true,false,null,{}],"b":{"c":[]}}`,
		`  {"x" : "y" }  `,
	}
	for _, d := range docs {
		skipAgrees(t, d)
		// Every truncation and a corruption at every byte must agree too.
		for i := range len(d) {
			skipAgrees(t, d[:i])
			for _, c := range []byte{'"', '}', ',', 'x', '\\', 0x01} {
				b := []byte(d)
				b[i] = c
				skipAgrees(t, string(b))
			}
		}
	}
	for _, bad := range []string{`{"a":01}`, `[1,]`, `{"a" 1}`, `{"a":tru}`, `"\x"`, `"\u12"`, `-`, `1.`, `1e`, `{,}`} {
		skipAgrees(t, bad)
	}
}

func TestStringsDecodeLikeEncodingJSON(t *testing.T) {
	for _, src := range []string{`"plain"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\ud83d\ude00"`, `"\ud83d x"`, `"\udc00\ud83d\ude00"`, "\"bad \xff\"", `null`} {
		var s Scanner
		s.Reset([]byte(src))
		got, err := s.String()
		var want string
		werr := json.Unmarshal([]byte(src), &want)
		if (err == nil) != (werr == nil) || got != want {
			t.Errorf("%s: got %q (%v), encoding/json %q (%v)", src, got, err, want, werr)
		}
	}
}

func TestStringWordAtATimeFindsEveryLane(t *testing.T) {
	for _, special := range []string{`\"`, `\\`, `\n`, "\x01", "é", "\xff", `\u00e9`} {
		for pos := 0; pos < 24; pos++ {
			src := `"` + "abcdefghijklmnopqrstuvwxyz"[:pos] + special + `abcdefghijklmnop"`
			var s Scanner
			s.Reset([]byte(src))
			got, err := s.String()
			var want string
			werr := json.Unmarshal([]byte(src), &want)
			if (err == nil) != (werr == nil) || got != want {
				t.Fatalf("%q: got %q (%v), want %q (%v)", src, got, err, want, werr)
			}
		}
	}
	if !Valid([]byte(` {"a":[1,"x"]} `)) || Valid([]byte(`{"a":}`)) {
		t.Fatal("Valid disagrees")
	}
}
