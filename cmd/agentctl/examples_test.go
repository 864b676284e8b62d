package main

import (
	"strings"
	"testing"
)

// exampleArgs returns the arguments of each line of a command's Example
// that runs `agentctl` followed by path (as "instance list"): its words as
// a shell splits them ([shellSplit]), after path and up to the first shell
// operator (|, &&, ;, & or > standing as a word of its own).
func exampleArgs(t *testing.T, example, path string) [][]string {
	t.Helper()
	var all [][]string
	for _, line := range strings.Split(example, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "agentctl "+path)
		if !ok || (rest != "" && rest[0] != ' ') {
			continue
		}
		var args []string
		if strings.TrimSpace(rest) != "" {
			words, err := shellSplit(rest)
			if err != nil {
				t.Fatalf("example %q: %v", line, err)
			}
			for _, w := range words {
				if w == "|" || w == "&&" || w == ";" || w == "&" || w == ">" {
					break
				}
				args = append(args, w)
			}
		}
		all = append(all, args)
	}
	return all
}

func TestExampleArgs(t *testing.T) {
	got := exampleArgs(t, "  agentctl instance list -q --status done | xargs -n1 agentctl instance delete\n"+
		"  agentctl instance list --jq '.[] | select(.n > 0) | .id'\n  agentctl instance listx\n  agentctl instance list", "instance list")
	want := [][]string{{"-q", "--status", "done"}, {"--jq", ".[] | select(.n > 0) | .id"}, nil}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range want {
		if strings.Join(got[i], "\x00") != strings.Join(want[i], "\x00") {
			t.Errorf("line %d: %q, want %q", i, got[i], want[i])
		}
	}
}

// TestInstanceListExamples: every example `instance list --help` gives
// runs (on a store with an instance; each lists it or nothing).
func TestInstanceListExamples(t *testing.T) {
	t.Parallel()
	f := newTestFactory(t, "NO_COLOR=1")
	f.createNamed(t, "claude-code", "listed")
	examples := exampleArgs(t, NewCmdInstanceList(f.Factory, nil).Example, "instance list")
	if len(examples) < 5 {
		t.Fatalf("found %d examples of instance list: %q", len(examples), examples)
	}
	for _, args := range examples {
		if _, code, err := f.run(t, NewCmdInstanceList(f.Factory, nil), args...); code != 0 {
			t.Errorf("agentctl instance list %s: exit %d: %v", strings.Join(args, " "), code, err)
		}
	}
}
