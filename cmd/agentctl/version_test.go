package main

import (
	"encoding/json"
	"runtime/debug"
	"testing"
)

func TestReadBuildVersion(t *testing.T) {
	checkout := &debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.modified", Value: "true"},
	}}
	for _, tc := range []struct {
		name            string
		bi              *debug.BuildInfo
		version, commit string
		want            string
	}{
		{"a dev build of a checkout with changes", checkout, "dev", "", "agentctl dev (commit 0123456789ab, modified, go1.26.8)"},
		{"a release: the checkout's commit wins over -X main.commit", checkout, "v1.2.0", "fedcba", "agentctl v1.2.0 (commit 0123456789ab, modified, go1.26.8)"},
		{"no VCS information: -X main.commit", &debug.BuildInfo{GoVersion: "go1.26.8"}, "v1.2.0", "fedcba9876543210", "agentctl v1.2.0 (commit fedcba987654, go1.26.8)"},
		{"nothing known", &debug.BuildInfo{GoVersion: "go1.26.8"}, "", "", "agentctl dev (commit unknown, go1.26.8)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := readBuildVersion(tc.bi, tc.version, tc.commit).String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestVersionJSON(t *testing.T) {
	io, _, out, _ := newTestIOStreams()
	v := buildVersion{Version: "v1.2.0", Commit: "0123456789abcdef", Modified: true, Go: "go1.26.8"}
	if err := versionRun(&VersionOptions{IO: io, Version: v, Output: formatJSON}); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"version": "v1.2.0", "commit": "0123456789abcdef", "modified": true, "go": "go1.26.8"}
	if len(got) != len(want) {
		t.Errorf("fields %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %v, want %v", k, got[k], w)
		}
	}
}
