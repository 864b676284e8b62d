package wire

import (
	"strings"
	"testing"
)

// TestParse: what one reading of a line gives the guard and the lane: the
// kind, the key, the progress token and a cancellation's requestId as
// go-sdk reads them (keys decoded, the last of duplicates), whether the
// lane may read it by itself, and how deep it nests.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		line       string
		kind       Kind
		key, token string
		plain      bool
		depth      int
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"p"}}}`, Request, "n7", `"p"`, true, 3},
		{`{"jsonrpc":"2.0","id":"a","method":"x","params":{"_meta":{"progress\u0054oken":1,"progressToken":2}}}`, Request, "sa", "2", true, 3},
		{`{"jsonrpc":"2.0","\u0069d":7.5,"method":"x"}`, Request, "n7", "", false, 1},
		{`{"jsonrpc":"2.0","id":1,"method":"tools\/call"}`, Request, "n1", "", false, 1},
		{`{"jsonrpc":"2.0","id":1,"method":"x","x":1}`, Request, "n1", "", false, 1},
		{`{"jsonrpc":"2.0 ","id":1,"method":"x"}`, Request, "n1", "", false, 1},
		{`{"jsonrpc":"2.0","id":null,"method":"x"}`, Other, "", "", true, 1},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a","request\u0049d":6.0,"reason":"r"}}`, Cancellation, "n6", "", true, 2},
		{`{"jsonrpc":"2.0","id":2,"method":"notifications/cancelled","params":{"requestId":"a"}}`, MisplacedID, "", "", true, 2},
		{`{"jsonrpc":"2.0","id":2,"result":{"a":[[{}]]}}`, Other, "", "", true, 5},
		{`[{"jsonrpc":"2.0","id":2,"method":"x"}]`, Other, "", "", false, 1},
	} {
		var m Message
		m.Parse([]byte(c.line))
		if m.Kind != c.kind || string(m.Key) != c.key || string(m.Token) != c.token || m.Plain != c.plain || m.Depth != c.depth {
			t.Errorf("%s: kind %v, key %q, token %q, plain %v, depth %d; want %v, %q, %q, %v, %d",
				c.line, m.Kind, m.Key, m.Token, m.Plain, m.Depth, c.kind, c.key, c.token, c.plain, c.depth)
		}
	}
	var m Message
	deep := `{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth) + "}"
	if m.Parse([]byte(deep)); m.Depth != MaxDepth+1 || !TooDeep([]byte(deep)) {
		t.Errorf("a line %d deep: depth %d", MaxDepth+1, m.Depth)
	}
}

// TestEnvelope: what the endpoint writes is read up to its id and its
// result or error, never into a result.
func TestEnvelope(t *testing.T) {
	for _, c := range []struct {
		msg, id, err, token string
		answer              bool
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{"id":2,"error":{}}}`, "1", "", "", true},
		{`{"jsonrpc":"2.0","result":{"id":2},"id":3}`, "3", "", "", true},
		{`{"jsonrpc":"2.0","error":{"code":0},"id":"x"}`, `"x"`, `{"code":0}`, "", true},
		{`{"jsonrpc":"2.0","id":4,"method":"elicitation/create","params":{}}`, "4", "", "", false},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`, "", "", `"t"`, false},
	} {
		var m Message
		m.Envelope([]byte(c.msg))
		if string(m.ID) != c.id || string(m.Error) != c.err || string(m.Token) != c.token || m.Answer != c.answer {
			t.Errorf("%s: id %s, error %s, token %s, answer %v", c.msg, m.ID, m.Error, m.Token, m.Answer)
		}
	}
}

// TestTooDeepCountsOnlyNesting: brackets in strings, or side by side,
// are no depth, however many a line has; nesting one past MaxDepth is.
func TestTooDeepCountsOnlyNesting(t *testing.T) {
	t.Parallel()
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, c := range []struct {
		line string
		deep bool
	}{
		{`{"a":1}`, false},
		{nest(MaxDepth), false},
		{nest(MaxDepth + 1), true},
		{`["` + strings.Repeat("[", 3*MaxDepth) + `"]`, false},
		{strings.Repeat("[],", 2*MaxDepth) + "[]", false},
		{`"` + strings.Repeat("{", MaxDepth) + `",` + nest(MaxDepth+1), true},
		{`"\"` + strings.Repeat("[", MaxDepth) + `"` + nest(2), false},
	} {
		if got := TooDeep([]byte(c.line)); got != c.deep {
			t.Errorf("TooDeep(%.40q... %d bytes) = %v, want %v", c.line, len(c.line), got, c.deep)
		}
	}
}
