package main

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/agentctl/agentctl/instance"
)

func TestNewCmdInstanceWait(t *testing.T) {
	tests := []struct {
		args    []string
		want    InstanceWaitOptions
		wantErr string
	}{
		{args: []string{"fix-login"}, want: InstanceWaitOptions{Instance: "fix-login"}},
		{args: []string{"x", "--run", "01k0000000000000000000000a"}, want: InstanceWaitOptions{Instance: "x", Run: "01k0000000000000000000000a"}},
		{args: []string{"x", "--next", "--timeout", "1m"}, want: InstanceWaitOptions{Instance: "x", Next: true, Timeout: time.Minute}},
		{args: []string{"x", "--status", "done"}, want: InstanceWaitOptions{Instance: "x", Status: "done"}},
		{args: []string{"x", "--status", "done", "--next"}, wantErr: "--status waits for the instance's latest reported status; --run and --next wait for a run's end: give one or the other"},
		{args: []string{"x", "--run", "r1", "--next"}, wantErr: "give --run ID or --next, not both"},
		{args: []string{"x", "--run", " "}, wantErr: "--run needs a run id"},
		{args: []string{"01jq3", "--status", "blocked", "--timeout", "30m"}, want: InstanceWaitOptions{Instance: "01jq3", Status: "blocked", Timeout: 30 * time.Minute}},
		{args: []string{"--status=failed", "x", "--timeout=0"}, want: InstanceWaitOptions{Instance: "x", Status: "failed"}},
		{args: []string{"x", "--status", "finished"}, wantErr: `invalid --status "finished": use one of running, blocked, done, failed`},
		{args: []string{"x", "--timeout", "-1s"}, wantErr: "invalid --timeout -1s"},
		{args: []string{"x", "--timeout", "soon"}, wantErr: `invalid argument "soon" for "--timeout"`},
		{args: nil, wantErr: "wait needs an instance id, id prefix or label (got 0 arguments)"},
	}
	for _, tt := range tests {
		f := newUnloadedTestFactory(t)
		var got *InstanceWaitOptions
		cmd := NewCmdInstanceWait(f.Factory, func(_ context.Context, o *InstanceWaitOptions) error {
			got = o
			return nil
		})
		err := runCommand(f, cmd, tt.args...)
		if !checkUsageError(t, tt.args, err, tt.wantErr) {
			continue
		}
		if got.IO != f.IOStreams || got.Store == nil || got.Poll != nil {
			t.Errorf("%q: the options lack the factory's streams or store, or poll by hand", tt.args)
		}
		got.IO, got.Store, got.since = nil, nil, time.Time{}
		if !reflect.DeepEqual(*got, tt.want) {
			t.Errorf("%q: options %+v, want %+v", tt.args, *got, tt.want)
		}
	}
}

// TestInstanceWaitDeleted: an instance deleted while `instance wait` waits
// for it ends the wait with "was deleted" (exit 3), not "not found".
func TestInstanceWaitDeleted(t *testing.T) {
	f := newTestFactory(t)
	rec := f.create(t, "auggie")
	ctx := context.Background()
	opts := &InstanceWaitOptions{
		IO: f.IOStreams, Store: f.Store, Instance: rec.ID, Status: "done",
		// The instance goes while the wait pauses between polls.
		Poll: func(src instance.EventSource) *instance.Poller {
			return &instance.Poller{Source: src, After: func(time.Duration) <-chan time.Time {
				st, err := f.Store(ctx, false)
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				if _, err := st.Delete(ctx, rec.ID); err != nil && !errors.Is(err, instance.ErrNotFound) {
					t.Fatal(err)
				}
				ch := make(chan time.Time, 1)
				ch <- time.Time{}
				return ch
			}}
		},
	}
	err := instanceWaitRun(ctx, opts)
	want := `instance "` + rec.ID + `" was deleted; it had not reported done`
	if err == nil || err.Error() != want || !errors.Is(err, instance.ErrDeleted) {
		t.Fatalf("err %v, want %q matching ErrDeleted", err, want)
	}
	if code := exitCode(ctx, err); code != ExitNotFound {
		t.Errorf("exit %d, want %d", code, ExitNotFound)
	}
}
