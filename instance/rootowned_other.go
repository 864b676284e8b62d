//go:build !unix

package instance

import "os"

// RootOwnedRefusal: the clients that trust only root-owned files check
// POSIX owners, which this platform has not; nothing is refused here.
func RootOwnedRefusal(string) string { return "" }

// keepOwner: file ownership is not carried over here.
func keepOwner(string, os.FileInfo) bool { return true }

// hardLinked: links are not counted here.
func hardLinked(os.FileInfo) bool { return false }

// newFileMode: modes are not POSIX here.
func newFileMode() os.FileMode { return 0o644 }
