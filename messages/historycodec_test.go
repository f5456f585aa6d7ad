package messages

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// plainType is t with every struct type replaced by a method-free copy
// (reflect.StructOf, same fields and tags), so msgpack encodes it by
// reflection: the reference the hand-written encoders must equal. A field
// added to any of these types is filled and compared too.
func plainType(t reflect.Type) reflect.Type {
	switch t.Kind() {
	case reflect.Struct:
		fs := make([]reflect.StructField, t.NumField())
		for i := range fs {
			f := t.Field(i)
			fs[i] = reflect.StructField{Name: f.Name, Type: plainType(f.Type), Tag: f.Tag}
		}
		return reflect.StructOf(fs)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return t
		}
		return reflect.SliceOf(plainType(t.Elem()))
	case reflect.Pointer:
		return reflect.PointerTo(plainType(t.Elem()))
	}
	return t
}

// plainCopy copies v into a value of plainType(v.Type()).
func plainCopy(v reflect.Value) reflect.Value {
	pt := plainType(v.Type())
	out := reflect.New(pt).Elem()
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			out.Field(i).Set(plainCopy(v.Field(i)))
		}
	case reflect.Slice:
		if v.IsNil() || pt == v.Type() {
			if !v.IsNil() {
				out.Set(v)
			}
			break
		}
		out.Set(reflect.MakeSlice(pt, v.Len(), v.Len()))
		for i := range v.Len() {
			out.Index(i).Set(plainCopy(v.Index(i)))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			out.Set(plainCopy(v.Elem()).Addr())
		}
	default:
		out.Set(v.Convert(pt))
	}
	return out
}

// fillBody sets each field (recursively) with probability p to a non-zero value.
func fillBody(v reflect.Value, r *rand.Rand, p float64) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if r.Float64() < p {
				fillBody(v.Field(i), r, p)
			}
		}
	case reflect.String:
		v.SetString(string(rune('a' + r.IntN(26))))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt([]int64{1, -1, 127, -33, 300, 1 << 40, -1 << 40}[r.IntN(7)])
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte{byte(r.IntN(256))})
			return
		}
		n := 1 + r.IntN(2)
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := range n {
			fillBody(v.Index(i), r, p)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillBody(v.Elem(), r, p)
	default:
		panic("fill: no case for " + v.Kind().String())
	}
}

func TestBodyEncodersEqualTheLibrarysReflection(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		p := []float64{0, 1, 0.5, 0.2}[i%4]
		var m Message
		fillBody(reflect.ValueOf(&m).Elem(), r, p)
		got, err := msgpack.Marshal(&m)
		if err != nil {
			t.Fatal(err)
		}
		want, err := msgpack.Marshal(plainCopy(reflect.ValueOf(m)).Interface())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("case %d: %+v\n got %x\nwant %x", i, m, got, want)
		}
		var back Message
		if err := msgpack.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		if b2, _ := msgpack.Marshal(back); !bytes.Equal(b2, got) {
			t.Fatalf("case %d: decoded and encoded again differs", i)
		}
	}
}

func BenchmarkEncodeMessageBody(b *testing.B) {
	var m Message
	fillBody(reflect.ValueOf(&m).Elem(), rand.New(rand.NewPCG(3, 4)), 0.6)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := msgpack.Marshal(&m); err != nil {
			b.Fatal(err)
		}
	}
}
