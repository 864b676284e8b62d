//go:build !unix

package instance

import "time"

// processAlive is not looked at where run locks are not tracked.
func processAlive(int, time.Time) bool { return true }

// clientAlive is not looked at where run locks are not tracked.
func clientAlive(*Run) bool { return false }

// endClient is not needed where run locks are not tracked.
func endClient(*Run, time.Duration) (string, bool) { return "", true }
