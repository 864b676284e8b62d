package main

import (
	"strings"
	"testing"
)

// exampleArgs returns the arguments of each line of a command's Example
// that runs `agentctl` followed by path (as "instance list"): the words
// after it, up to the first shell operator outside quotes, with the
// quotes taken away as a shell would.
func exampleArgs(example, path string) [][]string {
	var all [][]string
	for _, line := range strings.Split(example, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "agentctl "+path)
		if !ok || (rest != "" && rest[0] != ' ') {
			continue
		}
		var args []string
		var word strings.Builder
		inWord := false
		var quote byte
	scan:
		for i := 0; i < len(rest); i++ {
			c := rest[i]
			switch {
			case quote != 0 && c == quote:
				quote = 0
			case quote != 0:
				word.WriteByte(c)
			case c == '\'' || c == '"':
				quote, inWord = c, true
			case c == '|' || c == '&' || c == ';' || c == '>':
				break scan
			case c == ' ':
				if inWord {
					args = append(args, word.String())
					word.Reset()
					inWord = false
				}
			default:
				word.WriteByte(c)
				inWord = true
			}
		}
		if inWord {
			args = append(args, word.String())
		}
		all = append(all, args)
	}
	return all
}

func TestExampleArgs(t *testing.T) {
	got := exampleArgs("  agentctl instance list -q --status done | xargs -n1 agentctl instance delete\n"+
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
	examples := exampleArgs(NewCmdInstanceList(f.Factory, nil).Example, "instance list")
	if len(examples) < 5 {
		t.Fatalf("found %d examples of instance list: %q", len(examples), examples)
	}
	for _, args := range examples {
		if _, code, err := f.run(t, NewCmdInstanceList(f.Factory, nil), args...); code != 0 {
			t.Errorf("agentctl instance list %s: exit %d: %v", strings.Join(args, " "), code, err)
		}
	}
}
