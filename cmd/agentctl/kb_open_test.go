package main

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

// TestKBOpenError: a folder that is not there is not found (exit 3); one
// this user may not read is exit 4 and says so, not "pass the folder".
func TestKBOpenError(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
		want string
	}{
		{&fs.PathError{Op: "stat", Path: "/kb", Err: fs.ErrNotExist}, ExitNotFound, "does not exist"},
		{&fs.PathError{Op: "open", Path: "/kb", Err: fs.ErrPermission}, ExitInvalid, "you may not read the knowledge base folder kb: run as a user who may"},
		{errors.New("knowledge base \"kb\": /kb is not a directory"), ExitNotFound, "pass the folder of Markdown files"},
	} {
		err := kbOpenError("kb", c.err)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != c.code || !strings.Contains(err.Error(), c.want) {
			t.Errorf("kbOpenError(%v) = %v; want exit %d saying %q", c.err, err, c.code, c.want)
		}
	}
}
