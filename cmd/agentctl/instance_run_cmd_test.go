package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestNewCmdInstanceRun: the prompt decides headless or interactive, a
// terminal is needed for interactive, and what follows -- goes to the client.
func TestNewCmdInstanceRun(t *testing.T) {
	dir := t.TempDir()
	promptFile := filepath.Join(dir, "task.md")
	if err := os.WriteFile(promptFile, []byte("from the file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type want struct {
		Instance, Prompt string
		HasPrompt        bool
		ClientArgs       []string
		DryRun           bool
	}
	tests := []struct {
		args    []string
		tty     bool
		stdin   string
		want    want
		wantErr string
	}{
		{args: []string{"fix", "--prompt", "go"}, want: want{Instance: "fix", Prompt: "go", HasPrompt: true, ClientArgs: []string{}}},
		{args: []string{"fix", "-p", "go", "--", "--model", "opus", "-x"}, want: want{Instance: "fix", Prompt: "go", HasPrompt: true, ClientArgs: []string{"--model", "opus", "-x"}}},
		{args: []string{"fix", "--prompt-file", promptFile}, want: want{Instance: "fix", Prompt: "from the file\n", HasPrompt: true, ClientArgs: []string{}}},
		{args: []string{"fix", "--prompt-file", "-"}, stdin: "piped", want: want{Instance: "fix", Prompt: "piped", HasPrompt: true, ClientArgs: []string{}}},
		{args: []string{"fix"}, tty: true, want: want{Instance: "fix", ClientArgs: []string{}}},
		{args: []string{"fix", "--", "--resume"}, tty: true, want: want{Instance: "fix", ClientArgs: []string{"--resume"}}},
		{args: []string{"fix", "--dry-run"}, want: want{Instance: "fix", DryRun: true, ClientArgs: []string{}}},
		{args: []string{"fix"}, wantErr: "no prompt, and stdin is not a terminal"},
		{args: []string{"fix", "--prompt", "a", "--prompt-file", promptFile}, wantErr: "give --prompt or --prompt-file, not both"},
		{args: []string{"fix", "--prompt", ""}, wantErr: "the prompt is empty"},
		{args: []string{"fix", "--prompt-file", ""}, wantErr: "--prompt-file is empty; give the file that holds the prompt, or - to read it from stdin"},
		{args: []string{"fix", "other", "--prompt", "a"}, wantErr: `needs one instance (an id, id prefix or label) before --`},
		{args: []string{"--", "fix"}, wantErr: `needs one instance`},
		{args: nil, wantErr: `run needs an instance id, id prefix or label (got 0 arguments)`},
		{args: []string{"fix", "-p", "a", "-o", "yaml"}, wantErr: `invalid output format "yaml"`},
	}
	for _, tt := range tests {
		f := newUnloadedTestFactory(t)
		f.IOStreams.SetStdinTTY(tt.tty)
		f.in.WriteString(tt.stdin)
		var got *InstanceRunOptions
		cmd := NewCmdInstanceRun(f.Factory, func(_ context.Context, o *InstanceRunOptions) error {
			got = o
			return nil
		})
		err := runCommand(f, cmd, tt.args...)
		if !checkUsageError(t, tt.args, err, tt.wantErr) {
			continue
		}
		g := want{Instance: got.Instance, Prompt: got.Prompt, HasPrompt: got.hasPrompt, ClientArgs: got.ClientArgs, DryRun: got.DryRun}
		if g.ClientArgs == nil {
			g.ClientArgs = []string{}
		}
		if !reflect.DeepEqual(g, tt.want) {
			t.Errorf("%q: options %+v, want %+v", tt.args, g, tt.want)
		}
	}
}
