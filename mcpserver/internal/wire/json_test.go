package wire

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// FuzzValid: Valid says what encoding/json.Valid says, of any line:
// nested or not, broken anywhere, with bytes that are not UTF-8.
func FuzzValid(f *testing.F) {
	for _, s := range []string{
		`{}`, ` [ ] `, `"x"`, `-0`, `1.5e-3`, `1E+2`, `true`, `null`,
		`01`, `1.`, `.5`, `-`, `+1`, `nul`, `tru`, `{"a":1,}`, `[1,2`, `{"a" 1}`, `{}x`, `{} {}`,
		`"\u00e9"`, `"\ud800"`, `"\q"`, `"\u12"`, "\"\t\"", "\"\x01\"", "\"\xff\xfe\"", "\ufeff{}",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":[1,{"y":"}"}]}}}`,
		strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth),
		strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1),
		strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth),
		strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", b, got, want)
		}
	})
}

// FuzzEachMember: on valid JSON, EachMember finds exactly the members
// encoding/json finds, with the same values; and an Object that reads only
// every other value finds the same keys.
func FuzzEachMember(f *testing.F) {
	for _, s := range []string{
		`{}`, ` { } `, `[]`, `"x"`, `12`, `null`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","arguments":{"x":[1,{"y":"}"}]}}}`,
		`{"a":"q\"uote\\","b":[],"c":{},"d":-1.5e3,"e":true,"f":null}`,
		"{\n\t\"k\" :\r\n \"v\" , \"n\": [ \"]\" , { } ] }",
		`{"esc\u0061ped":1,"é":"ü"}`,
		`{"dup":1,"dup":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		var want map[string]json.RawMessage
		isObject := json.Unmarshal(b, &want) == nil && bytes.TrimSpace(b)[0] == '{'
		got := map[string]json.RawMessage{}
		var keys [][]byte
		ok := EachMember(b, func(k, v []byte) bool {
			var key string
			if err := json.Unmarshal(k, &key); err != nil {
				t.Fatalf("key %q: %v", k, err)
			}
			if !json.Valid(v) {
				t.Fatalf("value %q of %q is not JSON", v, k)
			}
			got[key] = v
			keys = append(keys, k)
			return true
		})
		if ok != isObject {
			t.Fatalf("EachMember(%q) = %v, want %v", b, ok, isObject)
		}
		if !ok {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("%q: members %v, want %v", b, got, want)
		}
		for k, w := range want {
			if !bytes.Equal(compact(t, got[k]), compact(t, w)) {
				t.Fatalf("%q: member %q = %q, want %q", b, k, got[k], w)
			}
		}
		o := NewObject(b)
		n := 0
		for o.Next() {
			if n >= len(keys) || !bytes.Equal(o.Key(), keys[n]) {
				t.Fatalf("%q: key %d is %q reading every other value", b, n, o.Key())
			}
			if n%2 == 1 {
				o.Value()
			}
			n++
		}
		if !o.Done() || n != len(keys) {
			t.Fatalf("%q: Object read %d of %d keys, done=%v", b, n, len(keys), o.Done())
		}
	})
}

func compact(t *testing.T, b []byte) []byte {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestEachMemberStopsWhenAsked(t *testing.T) {
	var seen []string
	ok := EachMember([]byte(`{"a":1,"b":2,"c":3}`), func(k, _ []byte) bool {
		seen = append(seen, string(k))
		return !KeyIs(k, "b")
	})
	if ok || len(seen) != 2 {
		t.Fatalf("ok=%v seen=%v: it must stop at b and say so", ok, seen)
	}
}

// TestObjectSkipsWhatItDoesNotRead: keys after a value that is not read are
// found without the caller scanning it; a malformed object is never Done.
func TestObjectSkipsWhatItDoesNotRead(t *testing.T) {
	o := NewObject([]byte(`{"jsonrpc":"2.0","id":7,"result":{"big":[1,2,{"}":"]"}]},"x":null}`))
	var keys []string
	var id []byte
	for o.Next() {
		keys = append(keys, string(o.Key()))
		if KeyIs(o.Key(), "id") {
			id = o.Value()
		}
	}
	if !o.Done() || string(id) != "7" || len(keys) != 4 || keys[3] != `"x"` {
		t.Fatalf("done=%v id=%s keys=%v", o.Done(), id, keys)
	}
	for _, bad := range []string{``, `[]`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1`, `{"a":"x`, `{"a":1 "b":2}`} {
		o := NewObject([]byte(bad))
		for o.Next() {
		}
		if o.Done() {
			t.Errorf("%q read as a whole object", bad)
		}
	}
}

func TestPlainString(t *testing.T) {
	for in, want := range map[string]string{`"tools/call"`: "tools/call", `""`: "", `"a\"b"`: "", `"a\u0062"`: "", `5`: "", `"x`: ""} {
		s, ok := PlainString([]byte(in))
		if ok != (want != "" || in == `""`) || string(s) != want {
			t.Errorf("PlainString(%s) = %q, %v", in, s, ok)
		}
	}
	if !KeyIs([]byte(`"name"`), "name") || KeyIs([]byte(`"nam\u0065"`), "name") || KeyIs([]byte(`"names"`), "name") {
		t.Error("KeyIs")
	}
	for in, want := range map[string]string{`"plain"`: "plain", `"a\u0062\n"`: "ab\n", `""`: ""} {
		if s, ok := String([]byte(in)); !ok || s != want {
			t.Errorf("String(%s) = %q, %v", in, s, ok)
		}
	}
	for _, in := range []string{`5`, `null`, `"x`, ``} {
		if _, ok := String([]byte(in)); ok {
			t.Errorf("String(%s) took a non-string", in)
		}
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"echo", "up__tool.v2-x", `q"uote`, "tab\t", "é", ""} {
		got := AppendString([]byte("x"), s)
		want, _ := json.Marshal(s)
		if !bytes.Equal(got[1:], want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got[1:], want)
		}
	}
}

func TestEachElement(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		ok   bool
	}{
		{`[]`, nil, true},
		{` [ ] `, nil, true},
		{`[1]`, []string{`1`}, true},
		{`[ {"a":[1,2]} , "x,]" ,null]`, []string{`{"a":[1,2]}`, `"x,]"`, `null`}, true},
		{`{}`, nil, false},
		{`[1,`, []string{`1`}, false},
		{`[1 2]`, []string{`1`}, false},
		{`[1] x`, []string{`1`}, false},
	} {
		var got []string
		ok := EachElement([]byte(tc.in), func(v []byte) bool { got = append(got, string(v)); return true })
		if ok != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("EachElement(%s) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
