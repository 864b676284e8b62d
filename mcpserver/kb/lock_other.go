//go:build !unix

package kb

import (
	"context"
	"io/fs"
)

// lockFile does not lock where flock is missing: two processes may then
// reconcile one index at once, which costs double work but loses nothing
// (every change is applied in a transaction that checks the file again).
func lockFile(ctx context.Context, _ string, _ func()) (unlock func(), err error) {
	return func() {}, ctx.Err()
}

// inode is 0 where the system does not say; size and modification time
// still tell changes apart.
func inode(fs.FileInfo) int64 { return 0 }

// writeProblem says why this process cannot write the index database at
// path; this system does not tell.
func writeProblem(string) string { return "its permissions or its file system do not allow it" }
