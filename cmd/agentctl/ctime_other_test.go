//go:build !linux

package main

import "os"

// ctimeNS is not read here.
func ctimeNS(os.FileInfo) (int64, bool) { return 0, false }
