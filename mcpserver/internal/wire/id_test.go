package wire

import "testing"

// TestIDReader: the top-level id of a line is read whole, in pieces of
// any size, wherever it is among the members, and only if it was written
// before the line broke off.
func TestIDReader(t *testing.T) {
	for _, tc := range []struct {
		line string
		want any // int64, string, or nil for none
	}{
		{`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x`, int64(7)},
		{`{"result":{"id":1,"content":[]},"jsonrpc":"2.0","id":42}`, int64(42)},
		{`{"result":{"text":"\"id\":3,"},"id":"abc\"d"}`, `abc"d`},
		{`{ "id" : 12 , "result":{}}`, int64(12)},
		{`{"result":{"a":[1,{"id":5}]},"jsonrpc":"2.0","id":`, nil},
		{`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","da`, nil},
		{`{"id":{"x":1},"result":{}}`, nil},
		{`{"id":1.5,"result":{}}`, nil},
		{`{"id":null,"error":{}}`, nil},
		{`not json`, nil},
	} {
		for _, piece := range []int{1, 3, 1 << 20} {
			var s IDReader
			for b := []byte(tc.line); len(b) > 0; {
				n := min(piece, len(b))
				s.Feed(b[:n])
				b = b[n:]
			}
			id, ok := s.ID()
			if tc.want == nil {
				if ok {
					t.Errorf("%s (pieces of %d): id %v, want none", tc.line, piece, id.Raw())
				}
				continue
			}
			if !ok || id.Raw() != tc.want {
				t.Errorf("%s (pieces of %d): id %v (%v), want %v", tc.line, piece, id.Raw(), ok, tc.want)
			}
		}
	}
}
