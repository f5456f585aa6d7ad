package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/tailscale/hujson"
)

// Kind is the JSON kind of a Value.
type Kind byte

// Kinds.
const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
)

// Pos is where a value was written: a file (or another named source) and,
// for files, the line and column of its first character (1-based).
type Pos struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
	Col  int    `json:"col,omitempty"`
}

func (p Pos) String() string {
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Value is one JSON value of a configuration with where it was written.
// Objects keep their keys in the order written, which matters: permission
// rules are ordered (the last match wins). A Value is never modified once
// built; Merge builds new ones.
type Value struct {
	Kind  Kind
	Str   string // String; the literal text of a Number
	Bool  bool
	Keys  []string // Object keys, in order
	Vals  []*Value // Object values, parallel to Keys
	Items []*Value // Array elements
	Pos   Pos
}

// Get returns the value of key in an object, nil when absent.
func (v *Value) Get(key string) *Value {
	if v == nil || v.Kind != Object {
		return nil
	}
	for i, k := range v.Keys {
		if k == key {
			return v.Vals[i]
		}
	}
	return nil
}

// At follows a path of object keys and array indexes ("agent", "plan",
// "steps"), nil when any step is missing.
func (v *Value) At(path ...string) *Value {
	for _, p := range path {
		if v == nil {
			return nil
		}
		switch v.Kind {
		case Object:
			v = v.Get(p)
		case Array:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(v.Items) {
				return nil
			}
			v = v.Items[i]
		default:
			return nil
		}
	}
	return v
}

// JSON is the value as standard JSON, keys in order.
func (v *Value) JSON() []byte {
	var b bytes.Buffer
	v.appendJSON(&b)
	return b.Bytes()
}

func (v *Value) appendJSON(b *bytes.Buffer) {
	if v == nil {
		b.WriteString("null")
		return
	}
	switch v.Kind {
	case Null:
		b.WriteString("null")
	case Bool:
		b.WriteString(strconv.FormatBool(v.Bool))
	case Number:
		b.WriteString(v.Str)
	case String:
		q, _ := json.Marshal(v.Str)
		b.Write(q)
	case Array:
		b.WriteByte('[')
		for i, it := range v.Items {
			if i > 0 {
				b.WriteByte(',')
			}
			it.appendJSON(b)
		}
		b.WriteByte(']')
	case Object:
		b.WriteByte('{')
		for i, k := range v.Keys {
			if i > 0 {
				b.WriteByte(',')
			}
			q, _ := json.Marshal(k)
			b.Write(q)
			b.WriteByte(':')
			v.Vals[i].appendJSON(b)
		}
		b.WriteByte('}')
	}
}

// hujsonPos matches the position hujson puts in its syntax errors.
var hujsonPos = regexp.MustCompile(`^hujson: line (\d+), column (\d+): (.*)$`)

// Parse parses JSON with comments and trailing commas (hujson). A syntax
// error is a *FileError with the line and column.
func Parse(file string, text []byte) (*Value, error) {
	hv, err := hujson.Parse(text)
	if err != nil {
		fe := &FileError{Path: file, Msg: err.Error()}
		if m := hujsonPos.FindStringSubmatch(err.Error()); m != nil {
			fe.Line, _ = strconv.Atoi(m[1])
			fe.Col, _ = strconv.Atoi(m[2])
			fe.Msg = m[3]
		}
		return nil, fe
	}
	lines := lineStarts(text)
	return fromHujson(file, lines, &hv)
}

// lineStarts are the offsets at which each line begins.
func lineStarts(b []byte) []int {
	starts := []int{0}
	for i, c := range b {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

func position(file string, lines []int, off int) Pos {
	// The last line starting at or before off.
	lo, hi := 0, len(lines)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if lines[mid] <= off {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return Pos{File: file, Line: lo + 1, Col: off - lines[lo] + 1}
}

func fromHujson(file string, lines []int, hv *hujson.Value) (*Value, error) {
	v := &Value{Pos: position(file, lines, hv.StartOffset)}
	switch t := hv.Value.(type) {
	case *hujson.Object:
		v.Kind = Object
		for i := range t.Members {
			m := &t.Members[i]
			name, ok := m.Name.Value.(hujson.Literal)
			if !ok || name.Kind() != '"' {
				return nil, v.errorf("object key is not a string")
			}
			val, err := fromHujson(file, lines, &m.Value)
			if err != nil {
				return nil, err
			}
			key := name.String()
			if j := indexOf(v.Keys, key); j >= 0 {
				v.Vals[j] = val // a repeated key: the later value wins, as in JavaScript
				continue
			}
			v.Keys = append(v.Keys, key)
			v.Vals = append(v.Vals, val)
		}
	case *hujson.Array:
		v.Kind = Array
		for i := range t.Elements {
			it, err := fromHujson(file, lines, &t.Elements[i])
			if err != nil {
				return nil, err
			}
			v.Items = append(v.Items, it)
		}
	case hujson.Literal:
		switch t.Kind() {
		case 'n':
			v.Kind = Null
		case 't', 'f':
			v.Kind, v.Bool = Bool, t.Bool()
		case '"':
			v.Kind, v.Str = String, t.String()
		case '0':
			v.Kind, v.Str = Number, string(t)
		default:
			return nil, v.errorf("invalid literal %q", string(t))
		}
	default:
		return nil, v.errorf("unexpected value")
	}
	return v, nil
}

func indexOf(keys []string, k string) int {
	for i, x := range keys {
		if x == k {
			return i
		}
	}
	return -1
}

func (v *Value) errorf(format string, args ...any) *FileError {
	return &FileError{Path: v.Pos.File, Line: v.Pos.Line, Col: v.Pos.Col, Msg: fmt.Sprintf(format, args...)}
}

// Merge returns over merged into base, as OpenCode merges configuration
// files: objects merge key by key, recursively (a key keeps its first
// position, takes the later value); anything else in over replaces what
// base has. Neither argument is modified.
func Merge(base, over *Value) *Value {
	if base == nil {
		return over
	}
	if over == nil {
		return base
	}
	if base.Kind != Object || over.Kind != Object {
		return over
	}
	out := &Value{Kind: Object, Pos: base.Pos,
		Keys: append([]string(nil), base.Keys...), Vals: append([]*Value(nil), base.Vals...)}
	for i, k := range over.Keys {
		if j := indexOf(out.Keys, k); j >= 0 {
			out.Vals[j] = Merge(out.Vals[j], over.Vals[i])
			continue
		}
		out.Keys = append(out.Keys, k)
		out.Vals = append(out.Vals, over.Vals[i])
	}
	return out
}

// Render writes v as indented JSONC, each scalar followed by a comment
// naming where it was written: what `sessionrt config show` prints.
func Render(v *Value) string {
	var b strings.Builder
	render(&b, v, 0)
	b.WriteByte('\n')
	return b.String()
}

func render(b *strings.Builder, v *Value, depth int) {
	ind := strings.Repeat("  ", depth+1)
	switch v.Kind {
	case Object:
		if len(v.Keys) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		for i, k := range v.Keys {
			q, _ := json.Marshal(k)
			b.WriteString(ind)
			b.Write(q)
			b.WriteString(": ")
			renderMember(b, v.Vals[i], depth+1, i < len(v.Keys)-1)
		}
		b.WriteString(ind[2:] + "}")
	case Array:
		if len(v.Items) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[\n")
		for i, it := range v.Items {
			b.WriteString(ind)
			renderMember(b, it, depth+1, i < len(v.Items)-1)
		}
		b.WriteString(ind[2:] + "]")
	default:
		b.Write(v.JSON())
	}
}

func renderMember(b *strings.Builder, v *Value, depth int, comma bool) {
	render(b, v, depth)
	if comma {
		b.WriteByte(',')
	}
	if v.Kind != Object && v.Kind != Array || (len(v.Keys) == 0 && len(v.Items) == 0) {
		b.WriteString(" // " + v.Pos.String())
	}
	b.WriteByte('\n')
}
