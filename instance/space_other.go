//go:build !linux

package instance

import (
	"errors"
	"os"
)

// fallocate is not used here: the reserve's bytes are written.
func fallocate(*os.File, int64) error { return errors.ErrUnsupported }

// freeSpace is not known here: a compaction is tried, and a full file
// system makes it fail harmlessly.
func freeSpace(string) (int64, bool) { return 0, false }

// reserve reserves nothing here: a write that fails half way is undone.
func reserve(*os.File, int64) error { return nil }
