package boltsql

import (
	"bytes"
	"sort"
	"testing"
)

// TestKeyBytesEncoding: strings and byte slices encode alike, NUL bytes are
// escaped, and byte order of the keys is the order of the values.
func TestKeyBytesEncoding(t *testing.T) {
	vals := []string{"", "\x00", "\x00\x00", "\x00\x01", "\x00\xff", "a", "a\x00", "a\x00b", "a\x01", "ab", "b", "\xff", "\xff\x00"}
	want := map[string]string{
		"":         "\x01\x00\x01",
		"\x00":     "\x01\x00\xff\x00\x01",
		"a\x00b":   "\x01a\x00\xffb\x00\x01",
		"\xff\x00": "\x01\xff\x00\xff\x00\x01",
	}
	var keys [][]byte
	for _, v := range vals {
		ks, err := appendKeyValue(nil, keyBytes, v)
		if err != nil {
			t.Fatal(err)
		}
		kb, err := appendKeyValue([]byte("p"), keyBytes, []byte(v))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(append([]byte("p"), ks...), kb) {
			t.Fatalf("%q: string key %q, bytes key %q", v, ks, kb)
		}
		if w, ok := want[v]; ok && string(ks) != w {
			t.Fatalf("%q: key %q, want %q", v, ks, w)
		}
		keys = append(keys, ks)
	}
	if !sort.SliceIsSorted(keys, func(i, j int) bool { return bytes.Compare(keys[i], keys[j]) < 0 }) {
		t.Fatalf("keys not in value order: %q", keys)
	}
}
