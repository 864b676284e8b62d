//go:build !unix

package kb

import (
	"io/fs"
	"os"
)

// mayWrite says yes where access(2) is missing: the write then fails, or
// not, by itself.
func mayWrite(string) bool { return true }

// keepGroup does nothing where files have no group.
func keepGroup(*os.File, fs.FileInfo) {}
