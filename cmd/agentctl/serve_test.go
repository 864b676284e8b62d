package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

func TestNewCmdServe(t *testing.T) {
	tests := []struct {
		args    []string
		check   func(*ServeOptions) bool
		wantErr string
	}{
		{args: nil, check: func(o *ServeOptions) bool {
			return o.Listen == DefaultListen && !o.AllowRemote && o.IdleStop == 10*time.Minute && o.MaxBody == "4MiB" && o.Grace == 30*time.Second && o.SessionTimeout == 0
		}},
		{args: []string{"--listen", "0.0.0.0:9000", "--allow-remote", "--allow-host", "box.example", "--idle-stop", "1m", "--max-body", "1MiB", "--grace", "5s"}, check: func(o *ServeOptions) bool {
			return o.Listen == "0.0.0.0:9000" && o.AllowRemote && len(o.AllowHosts) == 1 && o.IdleStop == time.Minute && o.MaxBody == "1MiB" && o.Grace == 5*time.Second
		}},
		{args: []string{"--grace", "soon"}, wantErr: `invalid argument "soon" for "--grace"`},
		{args: []string{"extra"}, wantErr: "takes no arguments"},
	}
	for _, tt := range tests {
		f := newUnloadedTestFactory(t)
		var got *ServeOptions
		cmd := NewCmdServe(f.Factory, func(_ context.Context, o *ServeOptions) error {
			got = o
			return nil
		})
		err := runCommand(f, cmd, tt.args...)
		if !checkUsageError(t, tt.args, err, tt.wantErr) {
			continue
		}
		if got.TokenChecker == nil || got.Store == nil || !tt.check(got) {
			t.Errorf("%q: options %+v", tt.args, *got)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"4MiB": 4 << 20, "512KiB": 512 << 10, "1000000": 1000000, "2MB": 2000000, "1 GiB": 1 << 30, "10b": 10} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1MiB", "4 parsecs", "0", "0.5", "0.9b"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q): no error", in)
		}
	}
}

// TestIdleStopZeroIsNever: --idle-stop 0 means never, as the help says,
// not the daemon's default of 10 minutes.
func TestIdleStopZeroIsNever(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{0: -1, -time.Second: -1, time.Minute: time.Minute} {
		if got := idleStop(in); got != want {
			t.Errorf("idleStop(%v) = %v, want %v", in, got, want)
		}
	}
}

func TestCheckListen(t *testing.T) {
	for _, c := range []struct {
		addr   string
		remote bool
		ok     bool
	}{
		{"127.0.0.1:7821", false, true},
		{"localhost:7821", false, true},
		{"[::1]:7821", false, true},
		{"0.0.0.0:7821", false, false},
		{":7821", false, false},
		{"0.0.0.0:7821", true, true},
		{"nonsense", true, false},
	} {
		if err := checkListen("--listen", c.addr, c.remote); (err == nil) != c.ok {
			t.Errorf("checkListen(%q, %v) = %v", c.addr, c.remote, err)
		}
	}
}

// TestServeRefusesBadValuesNamingTheFlag: a bad address is refused naming
// the flag it came from (mcp serve has --http, not --listen), and a
// negative --grace or --session-timeout, and a bad --base-url even without
// the web page (notifications link to it), are usage errors rather than
// accepted.
func TestServeRefusesBadValuesNamingTheFlag(t *testing.T) {
	for _, c := range []struct {
		cmd  func(f *testFactory) *cobra.Command
		args []string
		want string
	}{
		{func(f *testFactory) *cobra.Command { return NewCmdMCPServe(f.Factory, nil) }, []string{"--instance", "x", "--http", "7822"}, `--http "7822" is not host:port`},
		{func(f *testFactory) *cobra.Command { return NewCmdMCPServe(f.Factory, nil) }, []string{"--instance", "x", "--http", "0.0.0.0:0"}, `--http 0.0.0.0:0 is not a loopback address`},
		{func(f *testFactory) *cobra.Command { return NewCmdServe(f.Factory, nil) }, []string{"--listen", "7822"}, `--listen "7822" is not host:port`},
		{func(f *testFactory) *cobra.Command { return NewCmdServe(f.Factory, nil) }, []string{"--grace", "-5s"}, `--grace -5s is negative`},
		{func(f *testFactory) *cobra.Command { return NewCmdServe(f.Factory, nil) }, []string{"--session-timeout", "-1m"}, `--session-timeout -1m0s is negative`},
		{func(f *testFactory) *cobra.Command { return NewCmdServe(f.Factory, nil) }, []string{"--no-ui", "--base-url", "ftp://bad"}, `base`},
	} {
		f := newTestFactory(t)
		err := runCommand(f, c.cmd(f), c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v; want an error saying %q", c.args, err, c.want)
		}
	}
}
