//go:build !unix

package instance

// RootOwnedRefusal: the clients that trust only root-owned files check
// POSIX owners, which this platform has not; nothing is refused here.
func RootOwnedRefusal(string) string { return "" }
