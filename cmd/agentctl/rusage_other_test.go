//go:build !unix

package main

import "os"

// maxRSSKiB is not known here.
func maxRSSKiB(*os.ProcessState) int64 { return 0 }
