package main

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestNewCmdInstanceDelete(t *testing.T) {
	tests := []struct {
		args    []string
		want    InstanceDeleteOptions
		wantErr string // a usage error's message; "" for none
	}{
		{args: []string{"fix-login"}, want: InstanceDeleteOptions{Instance: "fix-login", Output: formatTable}},
		{args: []string{"01jq3", "--force"}, want: InstanceDeleteOptions{Instance: "01jq3", Output: formatTable, Force: true}},
		{args: []string{"fix-login", "-o", "json"}, want: InstanceDeleteOptions{Instance: "fix-login", Output: formatJSON}},
		{args: []string{"--force", "--output=json", "fix-login"}, want: InstanceDeleteOptions{Instance: "fix-login", Output: formatJSON, Force: true}},
		{args: []string{"fix-login", "-o", "yaml"}, wantErr: `invalid output format "yaml": use -o table or -o json`},
		{args: nil, wantErr: "delete needs an instance id, id prefix or label (got 0 arguments)"},
		{args: []string{"a", "b"}, wantErr: "(got 2 arguments)"},
		{args: []string{"a", "--forse"}, wantErr: "unknown flag: --forse"},
	}
	for _, tt := range tests {
		f := newUnloadedTestFactory(t)
		var got *InstanceDeleteOptions
		cmd := NewCmdInstanceDelete(f.Factory, func(_ context.Context, o *InstanceDeleteOptions) error {
			got = o
			return nil
		})
		err := runCommand(f, cmd, tt.args...)
		if !checkUsageError(t, tt.args, err, tt.wantErr) {
			continue
		}
		if got.IO != f.IOStreams || got.Store == nil || got.StateDir == nil || got.StateDir() != f.Config.StateDir() || got.Getenv == nil {
			t.Errorf("%q: the options lack the factory's streams, store, state directory or environment", tt.args)
		}
		got.IO, got.Store, got.StateDir, got.Getenv = nil, nil, nil, nil
		if !reflect.DeepEqual(*got, tt.want) {
			t.Errorf("%q: options %+v, want %+v", tt.args, *got, tt.want)
		}
	}
}

// checkUsageError checks a command test's error: none when want is "",
// else a usage error (exit 2) containing want. It reports whether the
// command ran (no error), so that its options can be checked.
func checkUsageError(t *testing.T, args []string, err error, want string) bool {
	t.Helper()
	var ue *usageError
	switch {
	case want == "" && err != nil:
		t.Errorf("%q: %v", args, err)
	case want == "":
		return true
	case !errors.As(err, &ue):
		t.Errorf("%q: %v, want a usage error saying %q", args, err, want)
	case !strings.Contains(err.Error(), want):
		t.Errorf("%q: %q, want it to say %q", args, err, want)
	}
	return false
}
