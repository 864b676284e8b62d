package instance

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

// SetConnectHookForTest installs fn as the hook [editConfig] calls after
// an edit ("edited") and just before its rename ("checked"), until the
// returned function removes it.
func SetConnectHookForTest(fn func(stage, path string)) (reset func()) {
	connectHook = fn
	return func() { connectHook = nil }
}

// TestNotWritable: a refused write beside a client's file (a directory the
// user may not write) is a configuration error that names the directory
// and what to do; other errors are left as they are.
func TestNotWritable(t *testing.T) {
	err := notWritable("/ws/.mcp.json", "/real/.mcp.json", &fs.PathError{Op: "open", Path: "/real/.tmp-x", Err: fs.ErrPermission})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "in /real, and renames it over the file") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("notWritable: %v", err)
	}
	other := errors.New("disk full")
	if err := notWritable("/ws/.mcp.json", "/ws/.mcp.json", other); err != other {
		t.Errorf("another error became %v", err)
	}
}
