package jsonscan

import (
	"encoding/json"
	"strings"
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

// FuzzValidAgreesWithEncodingJSON: the fast path must never accept what
// encoding/json refuses (the decoders rely on it), nor decode a string
// differently.
func FuzzValidAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5e3,"x\u00e9\n"]}`, `"\ud83d\ude00"`, `[]`, `{"a":{"b":null}}`, `-0.1`, `"a\"b"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if Valid(b) != json.Valid(b) && len(b) < 10000 {
			t.Fatalf("%q: jsonscan %v, encoding/json %v", b, Valid(b), json.Valid(b))
		}
		var s Scanner
		s.Reset(b)
		got, err := s.String()
		if err == nil && s.End() == nil {
			var want string
			if werr := json.Unmarshal(b, &want); werr != nil || got != want {
				t.Fatalf("%q: got %q, encoding/json %q (%v)", b, got, want, werr)
			}
		}
	})
}

func TestNestingLimitMatchesEncodingJSON(t *testing.T) {
	for _, depth := range []int{512, 10000, 10001} {
		doc := strings.Repeat("[", depth) + strings.Repeat("]", depth)
		if Valid([]byte(doc)) != json.Valid([]byte(doc)) {
			t.Errorf("depth %d: jsonscan %v, encoding/json %v", depth, Valid([]byte(doc)), json.Valid([]byte(doc)))
		}
	}
}

func TestPeekLooksAtTheNextValueWithoutConsumingIt(t *testing.T) {
	var s Scanner
	s.Reset([]byte(`  ["a"] `))
	if s.Peek() != '[' || s.Peek() != '[' {
		t.Fatal("peek moved or missed the array")
	}
	var got []string
	if err := s.Array(func() error { v, err := s.String(); got = append(got, v); return err }); err != nil || len(got) != 1 {
		t.Fatalf("%v %q", err, got)
	}
	if s.Peek() != 0 {
		t.Fatal("peek past the end")
	}
}
