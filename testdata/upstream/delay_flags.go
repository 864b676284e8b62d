package main

import (
	"flag"
	"os"
	"time"
)

// Flags for the first tools/list's tests and benchmarks (a server slow to
// come up):
//
//	-start-delay D    wait D (a Go duration) before reading stdin: initialize
//	                  is answered that much later
//	-start-gate FILE  wait until FILE exists before reading stdin (checked
//	                  every 10ms), so a test decides when the server comes
//	                  up instead of guessing a duration
//
// Both are applied after the -stderr text and -pidfile, before the exit and
// hang flags.
var (
	startDelay = flag.Duration("start-delay", 0, "wait this long before serving")
	startGate  = flag.String("start-gate", "", "wait until this file exists before serving")
)

// delayStart applies -start-delay and -start-gate.
func delayStart() {
	if *startDelay > 0 {
		time.Sleep(*startDelay)
	}
	if *startGate == "" {
		return
	}
	for {
		if _, err := os.Stat(*startGate); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
