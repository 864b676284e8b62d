package main

import (
	"runtime/debug"
	"testing"
)

func TestTuneGC(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	restore := tuneGC(func(string) string { return "" })
	if got := debug.SetGCPercent(longRunningGCPercent); got != longRunningGCPercent {
		t.Errorf("without GOGC the target is %d, want %d", got, longRunningGCPercent)
	}
	restore()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("restored, the target is %d, want the 100 it was", got)
	}
	tuneGC(func(k string) string {
		if k == "GOGC" {
			return "50"
		}
		return ""
	})
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set, the target became %d; want it left as the runtime set it (here 100)", got)
	}
}
