package mount

import (
	"strings"
	"testing"
)

func TestParsePrefixMode(t *testing.T) {
	for in, want := range map[string]PrefixMode{
		"":           PrefixModeMountName,
		"mount-name": PrefixModeMountName,
		"kb-name":    PrefixModeMountName, // the spelling of other tools' configurations
		"off":        PrefixModeOff,
	} {
		if got, err := ParsePrefixMode(in); err != nil || got != want {
			t.Errorf("ParsePrefixMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParsePrefixMode("kb"); err == nil || !strings.Contains(err.Error(), `invalid tool prefix mode "kb": use mount-name`) {
		t.Fatalf("got %v", err)
	}
}
