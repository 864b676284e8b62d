package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets testscript run this test binary as the agentctl command.
// Run as the tests, it first starts building the real binaries that some
// tests need (see [realBinary]), in the background and once per package.
func TestMain(m *testing.M) {
	testscript.Main(withBinaries{m}, map[string]func(){"agentctl": func() { os.Exit(Main()) }})
}

// withBinaries runs the tests while the real binaries are built.
type withBinaries struct{ m *testing.M }

func (w withBinaries) Run() int {
	raiseParallel()
	dir, err := os.MkdirTemp("", "agentctl-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	_, file, _, _ := runtime.Caller(0)
	pkg := filepath.Dir(file)
	builds = map[string]*build{
		"agentctl": startBuild(ctx, filepath.Join(dir, "agentctl"), pkg, ".", staticBuild...),
		"server":   startBuild(ctx, filepath.Join(dir, "upstream"), filepath.Join(pkg, "..", ".."), "./testdata/upstream"),
		// The fake coding-agent client of the `instance run` tests.
		"fakeclient": startBuild(ctx, filepath.Join(dir, "fakeclient"), filepath.Join(pkg, "..", ".."), "./testdata/fakeclient"),
	}
	code := w.m.Run()
	cancel()
	for _, b := range builds {
		<-b.done
	}
	os.RemoveAll(dir)
	return code
}

// minParallel is the least number of tests run at once. Most tests here
// wait on child processes (agentctl, node, the builds) rather than compute,
// so on a machine with few cores more than GOMAXPROCS of them in flight
// finish sooner; -parallel on the command line still decides.
const minParallel = 4

func raiseParallel() {
	for _, a := range os.Args[1:] {
		if strings.HasPrefix(a, "-test.parallel") || strings.HasPrefix(a, "--test.parallel") {
			return
		}
	}
	if f := flag.Lookup("test.parallel"); f != nil && runtime.GOMAXPROCS(0) < minParallel {
		_ = f.Value.Set(strconv.Itoa(minParallel))
	}
}

// build is a go build running in the background.
type build struct {
	path string
	done chan struct{}
	err  error
	out  []byte
}

// builds are the binaries that TestMain builds, by name.
var builds map[string]*build

// staticBuild is the environment agentctl is built in, by `make build` and
// for the tests, and with it every program a benchmark takes as its floor:
// a static binary (no cgo), which needs no C library and starts without
// the dynamic loader.
var staticBuild = []string{"CGO_ENABLED=0"}

// goBuild is the go build of pkg into path, with env settings
// (NAME=VALUE, as [staticBuild]) added to the test's environment.
func goBuild(ctx context.Context, path, dir, pkg string, env ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", path, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

func startBuild(ctx context.Context, path, dir, pkg string, env ...string) *build {
	b := &build{path: path, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		cmd := goBuild(ctx, path, dir, pkg, env...)
		b.out, b.err = cmd.CombinedOutput()
	}()
	return b
}

// binary waits for the build of name and returns the binary's path.
func binary(tb testing.TB, name string) string {
	tb.Helper()
	b := builds[name]
	<-b.done
	if b.err != nil {
		tb.Fatalf("go build %s: %v\n%s", name, b.err, b.out)
	}
	return b.path
}

// realBinary is agentctl built as a program (not this test binary), for
// the tests that must run the real program: the TypeScript client, process
// concurrency, start-up.
func realBinary(tb testing.TB) string { return binary(tb, "agentctl") }

// serverBin is testdata/upstream, a stdio MCP server for the tests.
func serverBin(tb testing.TB) string { return binary(tb, "server") }
