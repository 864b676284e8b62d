package mcpserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverPath is testdata/upstream, a small MCP server that can be told to
// crash, hang or change its tools. TestMain builds it once for the
// package's tests and benchmarks, while the first tests run; serverBin
// waits for it.
var (
	serverPath  string
	serverBuilt = make(chan struct{})
	serverErr   error
)

// serverEnv hands serverPath to the test binary's own subprocesses (a crash
// test's writer), which then build nothing.
const serverEnv = "AGENTCTL_TEST_SERVER"

func TestMain(m *testing.M) {
	if bin := os.Getenv(serverEnv); bin != "" {
		serverPath = bin
		close(serverBuilt)
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "agentctl-test-server-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverPath = filepath.Join(dir, "upstream")
	os.Setenv(serverEnv, serverPath)
	go func() {
		defer close(serverBuilt)
		cmd := exec.Command("go", "build", "-o", serverPath, "./testdata/upstream")
		cmd.Dir = ".." // the module's root
		if out, err := cmd.CombinedOutput(); err != nil {
			serverErr = fmt.Errorf("%v\n%s", err, out)
		}
	}()
	code := m.Run()
	<-serverBuilt
	os.RemoveAll(dir)
	os.Exit(code)
}

// serverBin is the path of testdata/upstream, once TestMain has built it.
func serverBin(tb testing.TB) string {
	<-serverBuilt
	if serverErr != nil {
		tb.Fatalf("build testdata/upstream: %v", serverErr)
	}
	return serverPath
}

type proxyEnv struct {
	ep     *Endpoint
	cs     *mcp.ClientSession
	log    *testkit.Buffer // the servers' stderr
	stderr *testkit.Buffer // the endpoint's own log
	cancel context.CancelFunc
	done   chan struct{}
	notes  chan string // tools/list_changed and progress seen by the client
	tokens chan any    // the progress token of each progress notification seen
}

// servePath is how a test's client reaches the endpoint.
type servePath string

const (
	// viaSDK: the SDK server, in memory; every message through go-sdk.
	viaSDK servePath = "sdk"
	// viaLane: ServeStdio over pipes, where external tools' calls take the
	// fast lane; the client speaks go-sdk's default protocol (2026-07-28,
	// stateless: no initialize, the client's details in each request).
	viaLane servePath = "lane"
	// viaLaneInit: the same with a client on 2025-11-25 (initialize, then
	// notifications/initialized), as today's agents speak.
	viaLaneInit servePath = "lane-2025-11-25"
)

// forEachPath runs a scenario through both paths, in parallel: what the
// client sees must not depend on which one carried it.
func forEachPath(t *testing.T, f func(t *testing.T, path servePath)) {
	t.Parallel()
	for _, path := range []servePath{viaSDK, viaLane, viaLaneInit} {
		t.Run(string(path), func(t *testing.T) {
			t.Parallel()
			f(t, path)
		})
	}
}

// startProxy serves an endpoint with the given mounts through the SDK; see
// startProxyOn.
func startProxy(t *testing.T, mode mount.PrefixMode, mounts ...mount.Mount) *proxyEnv {
	t.Helper()
	return startProxyOn(t, viaSDK, mode, mounts...)
}

// startProxyOn serves an endpoint with the given mounts (prefixes resolved
// by the contract) and connects a client by path; the endpoint runs until
// the test ends, then every server must have stopped.
func startProxyOn(t *testing.T, path servePath, mode mount.PrefixMode, mounts ...mount.Mount) *proxyEnv {
	t.Helper()
	return startProxyWith(t, path, nil, mode, mounts...)
}

// startProxyWith is startProxyOn with configure, if not nil, applied to
// the endpoint's configuration last.
func startProxyWith(t *testing.T, path servePath, configure func(*Config), mode mount.PrefixMode, mounts ...mount.Mount) *proxyEnv {
	t.Helper()
	cfg := testConfig(agents.NamespacingSuffix, newFakeStore())
	cfg.Mounts, cfg.PrefixMode = mounts, mode
	logBuf, stderr := &testkit.Buffer{}, &testkit.Buffer{}
	cfg.ServerStderr = logBuf
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	if configure != nil {
		configure(&cfg)
	}
	ep, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	env := &proxyEnv{ep: ep, log: logBuf, stderr: stderr, cancel: cancel, done: make(chan struct{}), notes: make(chan string, 100), tokens: make(chan any, 100)}
	var (
		ct         mcp.Transport
		serverDone func()
	)
	switch path {
	case viaSDK:
		ep.Start(ctx)
		go func() { ep.Wait(); close(env.done) }()
		st, c := mcp.NewInMemoryTransports()
		ss, err := ep.Server().Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		ct, serverDone = c, func() { ss.Wait() }
	case viaLane, viaLaneInit:
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		served := make(chan error, 1)
		go func() {
			served <- ep.ServeStdio(ctx, inR, outW)
			close(env.done)
		}()
		ct = &mcp.IOTransport{Reader: outR, Writer: inW}
		serverDone = func() {
			if err := <-served; err != nil {
				t.Errorf("ServeStdio: %v", err)
			}
		}
	}
	note := func(s string) {
		select {
		case env.notes <- s:
		default:
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { note("list_changed") },
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			note("progress")
			select {
			case env.tokens <- r.Params.ProgressToken:
			default:
			}
		},
	})
	var opts *mcp.ClientSessionOptions
	if path == viaLaneInit {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	}
	env.cs, err = client.Connect(context.Background(), ct, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		env.cs.Close()
		serverDone()
		env.stop(t)
		ep.Close()
	})
	return env
}

// laneCalls is how many calls the fast lane has forwarded (0 off stdio).
func (p *proxyEnv) laneCalls() int64 {
	if l := p.ep.lane.Load(); l != nil {
		return l.Stats().Forwarded
	}
	return 0
}

// checkPath fails unless the external calls so far took the path's way.
func (p *proxyEnv) checkPath(t *testing.T, path servePath, min int64) {
	t.Helper()
	if n := p.laneCalls(); (path != viaSDK) != (n >= min && n > 0) {
		t.Fatalf("path %s: the fast lane forwarded %d calls (want at least %d on the lane, none otherwise)", path, n, min)
	}
}

func (p *proxyEnv) stop(t *testing.T) {
	p.cancel()
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Fatal("the servers did not stop")
	}
}

func mcpMount(name string, args ...string) mount.Mount {
	return mount.Mount{Kind: mount.KindServer, Name: name, Command: "", Args: args}
}

func withBin(t *testing.T, m mount.Mount) mount.Mount {
	m.Command = serverBin(t)
	return m
}

func (p *proxyEnv) call(t *testing.T, name string, args map[string]any) (*mcp.CallToolResult, error) {
	t.Helper()
	return p.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// httpServer serves a go-sdk server over streamable HTTP.
func httpServer(t *testing.T, tools ...string) (*mcp.Server, *httptest.Server) {
	up := mcp.NewServer(&mcp.Implementation{Name: "http-upstream", Version: "1"}, nil)
	for _, name := range tools {
		mcp.AddTool(up, &mcp.Tool{Name: name, Description: "Says its name."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "remote " + name}}}, nil, nil
		})
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return up, srv
}
