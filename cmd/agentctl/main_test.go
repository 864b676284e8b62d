package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets testscript run this test binary as the agentctl command, and
// removes the binary that realBinary built.
func TestMain(m *testing.M) {
	//lint:ignore SA1019 RunMain returns the code, so the built binary can be removed before exiting.
	code := testscript.RunMain(m, map[string]func() int{"agentctl": Main})
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// realBinary builds agentctl once per test run, for the tests that must run
// the real program: the TypeScript client, process concurrency, start-up.
func realBinary(tb testing.TB) string {
	tb.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "agentctl-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "agentctl")
		_, file, _, _ := runtime.Caller(0)
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		cmd.Dir = filepath.Dir(file)
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = err
			tb.Logf("go build: %s", out)
		}
	})
	if binErr != nil {
		tb.Fatalf("build agentctl: %v", binErr)
	}
	return binPath
}
