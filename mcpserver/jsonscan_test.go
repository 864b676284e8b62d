package mcpserver

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzEachMember: on valid JSON, eachMember finds exactly the members
// encoding/json finds, with the same values.
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
		ok := eachMember(b, func(k, v []byte) bool {
			var key string
			if err := json.Unmarshal(k, &key); err != nil {
				t.Fatalf("key %q: %v", k, err)
			}
			if !json.Valid(v) {
				t.Fatalf("value %q of %q is not JSON", v, k)
			}
			got[key] = v
			return true
		})
		if ok != isObject {
			t.Fatalf("eachMember(%q) = %v, want %v", b, ok, isObject)
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
	ok := eachMember([]byte(`{"a":1,"b":2,"c":3}`), func(k, _ []byte) bool {
		seen = append(seen, string(k))
		return !keyIs(k, "b")
	})
	if ok || len(seen) != 2 {
		t.Fatalf("ok=%v seen=%v: it must stop at b and say so", ok, seen)
	}
}

func TestPlainString(t *testing.T) {
	for in, want := range map[string]string{`"tools/call"`: "tools/call", `""`: "", `"a\"b"`: "", `"a\u0062"`: "", `5`: "", `"x`: ""} {
		s, ok := plainString([]byte(in))
		if ok != (want != "" || in == `""`) || string(s) != want {
			t.Errorf("plainString(%s) = %q, %v", in, s, ok)
		}
	}
	if !keyIs([]byte(`"name"`), "name") || keyIs([]byte(`"nam\u0065"`), "name") || keyIs([]byte(`"names"`), "name") {
		t.Error("keyIs")
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"echo", "up__tool.v2-x", `q"uote`, "tab\t", "é", ""} {
		got := appendJSONString([]byte("x"), s)
		want, _ := json.Marshal(s)
		if !bytes.Equal(got[1:], want) {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got[1:], want)
		}
	}
}
