package kb

import (
	"slices"
	"strings"
	"testing"
)

func TestTokens(t *testing.T) {
	var toks []string
	tokens([]byte("Hello, World! max_bytes Ünïcode 2026-07 "+strings.Repeat("z", 65)), nil, func(tok []byte, s, e int) {
		toks = append(toks, string(tok))
	})
	if !slices.Equal(toks, []string{"hello", "world", "max", "bytes", "ünïcode", "2026", "07"}) {
		t.Fatalf("%q", toks)
	}
}
