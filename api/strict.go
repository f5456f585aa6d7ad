package api

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"
)

// encoding/json accepts three things a strict decoder refuses: a key given twice (the
// last wins), a key that matches a field only when case is ignored ("Prompt" fills
// "prompt"), and bytes that are not UTF-8 (replaced by U+FFFD). checkStrict finds them
// in a body the standard decoder accepted, walking its tokens alongside dst's type.

// strictError names the field (a dotted path, as the decoder's type errors do) and what
// is wrong with it.
type strictError struct {
	field, msg string
}

func (e *strictError) Error() string { return e.msg }

// checkUTF8 refuses a body that is not UTF-8, naming the first bad byte's offset.
func checkUTF8(body []byte) error {
	if utf8.Valid(body) {
		return nil
	}
	off := 0
	for off < len(body) {
		r, size := utf8.DecodeRune(body[off:])
		if r == utf8.RuneError && size <= 1 {
			break
		}
		off += size
	}
	return &strictError{msg: fmt.Sprintf("request body is not valid UTF-8 (byte offset %d): JSON text must be UTF-8", off)}
}

// checkStrict walks body (already accepted by the standard decoder into a value of type
// t) and refuses duplicate keys and keys that match a field of t only case-insensitively.
func checkStrict(body []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	return strictValue(dec, t, "")
}

func strictValue(dec *json.Decoder, t reflect.Type, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		return strictObject(dec, t, path)
	case json.Delim('['):
		var elem reflect.Type
		if t = concrete(t); t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for dec.More() {
			if err := strictValue(dec, elem, path); err != nil {
				return err
			}
		}
		_, err := dec.Token() // ']'
		return err
	}
	return nil
}

func strictObject(dec *json.Decoder, t reflect.Type, path string) error {
	t = concrete(t)
	var fields map[string]fieldInfo
	if t != nil && t.Kind() == reflect.Struct {
		fields = structFields(t)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		at := key
		if path != "" {
			at = path + "." + key
		}
		if seen[key] {
			return &strictError{field: at, msg: fmt.Sprintf("duplicate key %q (byte offset %d): each key may appear once", at, dec.InputOffset())}
		}
		seen[key] = true
		var next reflect.Type
		switch {
		case fields != nil:
			if f, ok := fields[key]; ok {
				next = f.typ
			} else if want, ok := foldedName(fields, key); ok {
				if path != "" {
					want = path + "." + want
				}
				return &strictError{field: at, msg: fmt.Sprintf("unknown field %q: keys are case-sensitive, want %q", at, want)}
			}
			// Any other unknown key was refused by the decoder already.
		case t != nil && t.Kind() == reflect.Map:
			next = t.Elem()
		}
		if err := strictValue(dec, next, at); err != nil {
			return err
		}
	}
	_, err := dec.Token() // '}'
	return err
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// concrete strips pointers; it returns nil (anything goes below, duplicates are still
// refused) for interfaces and for types that decode themselves.
func concrete(t reflect.Type) reflect.Type {
	for t != nil {
		if t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
			return nil
		}
		if t.Kind() != reflect.Pointer {
			return t
		}
		t = t.Elem()
	}
	return nil
}

type fieldInfo struct{ typ reflect.Type }

var fieldCache sync.Map // reflect.Type → map[string]fieldInfo

// structFields maps each JSON key of struct type t (tags, untagged names and the
// fields of embedded structs, as encoding/json sees them) to its field's type.
func structFields(t reflect.Type) map[string]fieldInfo {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]fieldInfo)
	}
	m := map[string]fieldInfo{}
	addFields(m, t, map[reflect.Type]bool{})
	fieldCache.Store(t, m)
	return m
}

func addFields(m map[string]fieldInfo, t reflect.Type, visiting map[reflect.Type]bool) {
	if visiting[t] {
		return
	}
	visiting[t] = true
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addFields(m, ft, visiting)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, ok := m[name]; !ok { // the shallower field wins, as in encoding/json
			m[name] = fieldInfo{typ: f.Type}
		}
	}
}

// foldedName finds the field key equals when case is ignored.
func foldedName(fields map[string]fieldInfo, key string) (string, bool) {
	for name := range fields {
		if strings.EqualFold(name, key) {
			return name, true
		}
	}
	return "", false
}
