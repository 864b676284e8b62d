package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// tourCommand is a command of the README's tour: its text (continuation
// lines joined), the line of README.md it starts on, and the exit code its
// comment promises ("# exit 7: ..."; 0 without one).
type tourCommand struct {
	text string
	line int
	exit int
}

// readmeTour is the commands of every ```sh block of README.md's "A tour"
// section (up to the next level-2 heading), in order.
func readmeTour(readme string) ([]tourCommand, error) {
	lines := strings.Split(readme, "\n")
	start := -1
	for i, l := range lines {
		if l == "## A tour" {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, fmt.Errorf(`README.md has no "## A tour" section`)
	}
	var cmds []tourCommand
	inBlock := false
	var cur *tourCommand
	for i := start + 1; i < len(lines); i++ {
		l := lines[i]
		if !inBlock && strings.HasPrefix(l, "## ") {
			break
		}
		switch {
		case !inBlock && l == "```sh":
			inBlock = true
			continue
		case inBlock && l == "```":
			inBlock = false
			continue
		case !inBlock:
			continue
		}
		if cur != nil {
			cur.text += "\n" + l
		} else {
			if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			cur = &tourCommand{text: l, line: i + 1}
		}
		if !strings.HasSuffix(l, "\\") {
			if m := tourExitRE.FindStringSubmatch(shellComment(l)); m != nil {
				fmt.Sscan(m[1], &cur.exit)
			}
			cmds = append(cmds, *cur)
			cur = nil
		}
	}
	if len(cmds) == 0 {
		return nil, fmt.Errorf("README.md's tour has no ```sh block")
	}
	return cmds, nil
}

// tourExitRE is a comment that promises an exit code.
var tourExitRE = regexp.MustCompile(`^#\s*exits? (\d+)\b`)

// shellComment is the comment that ends line, if any: from a '#' that
// starts a word outside quotes.
func shellComment(line string) string {
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' {
				i++
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '\\':
			i++
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[i:]
		}
	}
	return ""
}

// tourScript is the tour as one bash script that checks, after each
// command that is not put in the background, that it exited as promised,
// and stops at the first that did not, naming its line of README.md.
func tourScript(cmds []tourCommand) string {
	var b strings.Builder
	b.WriteString("set -o pipefail\n")
	b.WriteString(`__check() { if [ "$1" -ne "$2" ]; then echo "README.md:$3: exit $1, want $2" >&2; exit 1; fi; }` + "\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "echo '--- README.md:%d' >&2\n%s\n", c.line, c.text)
		if !strings.HasSuffix(strings.TrimSpace(strings.TrimSuffix(c.text, shellComment(c.text))), "&") {
			fmt.Fprintf(&b, "__check $? %d %d\n", c.exit, c.line)
		}
	}
	b.WriteString("wait\n")
	return b.String()
}

// TestREADMETourCommands: the extraction takes every command of the
// tour's blocks, with its continuation lines, skips comments, and reads a
// promised exit code.
func TestREADMETourCommands(t *testing.T) {
	t.Parallel()
	readme := "# x\n```sh\nnot the tour\n```\n## A tour\n\ntext\n```sh\na one   # comment\n\n# only a comment\nb 'x # y' \\\n  --two\nc --lint   # exit 7: problems\nd &\n```\n## Next\n```sh\nnot the tour\n```\n"
	cmds, err := readmeTour(readme)
	if err != nil {
		t.Fatal(err)
	}
	want := []tourCommand{{"a one   # comment", 9, 0}, {"b 'x # y' \\\n  --two", 12, 0}, {"c --lint   # exit 7: problems", 14, 7}, {"d &", 15, 0}}
	if fmt.Sprint(cmds) != fmt.Sprint(want) {
		t.Fatalf("got %+v\nwant %+v", cmds, want)
	}
	script := tourScript(cmds)
	for _, w := range []string{"a one   # comment\n__check $? 0 9\n", "c --lint   # exit 7: problems\n__check $? 7 14\n", "d &\nwait\n"} {
		if !strings.Contains(script, w) {
			t.Errorf("script lacks %q:\n%s", w, script)
		}
	}
}

// TestREADMETour runs README.md's tour as it is written, every ```sh block
// of its "A tour" section top to bottom in one bash, in a project
// directory with the folders and files it names, with agentctl (the real
// binary) on PATH and stand-ins for the programs it starts: Auggie is
// testdata/fakeclient, which asks "Which database?" when its prompt says
// "Ask me"; npx is testdata/upstream offering a tool named
// ask_user_question (the conflict the tour's `tools lint` shows); curl is
// the machine's. Each command must exit 0, or the code its comment
// promises ("# exit 7: ..."); a failure names the README line.
func TestREADMETour(t *testing.T) {
	t.Parallel()
	for _, prog := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(prog); err != nil {
			t.Fatalf("the tour needs %s: install it (apt-get install %s)", prog, prog)
		}
	}
	// The tour's serve listens on the default address, which its curl
	// names.
	if l, err := net.Listen("tcp", DefaultListen); err != nil {
		t.Fatalf("the tour's `agentctl serve` needs %s, which another program holds: %v; stop it and run the test again", DefaultListen, err)
	} else {
		l.Close()
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := readmeTour(string(readme))
	if err != nil {
		t.Fatal(err)
	}

	root := t.TempDir()
	bin := filepath.Join(root, "bin")
	project := filepath.Join(root, "project")
	for _, d := range []string{bin, project, filepath.Join(root, "home")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(realBinary(t), filepath.Join(bin, "agentctl")); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"bin/auggie": `#!/bin/sh
# A stand-in for Auggie: told to ask, it asks with ask_user_question.
case "$*" in
*"Ask me"*) FAKECLIENT_CALL=ask_user_question
  FAKECLIENT_ARGS='{"question":"Which database?","choices":["staging","production"]}'
  export FAKECLIENT_CALL FAKECLIENT_ARGS ;;
esac
FAKECLIENT_AS=auggie exec ` + binary(t, "fakeclient") + ` "$@"
`,
		"bin/npx":                   "#!/bin/sh\nexec " + serverBin(t) + " -tools 0 -tool-names ask_user_question\n",
		"project/docs/deploy.md":    "# Deploy\n\nTo deploy staging, run the pipeline.\n",
		"project/notes/meeting.md":  "# Meeting\n\nNotes.\n",
		"project/wiki/home.md":      "# Home\n",
		"project/handbook/intro.md": "# Intro\n",
		"project/task.md":           "Fix the signup test.\n",
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", tourScript(cmds))
	cmd.Dir = project
	cmd.Env = append(cleanEnviron(),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+filepath.Join(root, "home"),
		"XDG_CONFIG_HOME="+filepath.Join(root, "config"),
		"XDG_STATE_HOME="+filepath.Join(root, "state"),
		"XDG_CACHE_HOME="+filepath.Join(root, "cache"),
		"NO_COLOR=1",
	)
	// Nothing the tour starts outlives it: the serve it kills, the run it
	// waits for.
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's tour failed: %v\n%s", err, out)
	}
	// What the tour says happens, happened.
	for _, want := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`, // the endpoint answered on stdio
		`"status": "ok"`,                       // serve's /health
		"called=ask_user_question ok",          // the question was answered
		"ended done",                           // instance wait
		"auggie/mcp browser: ask_user_question: its name on the wire", // tools lint
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the tour's output lacks %q:\n%s", want, out)
		}
	}
}

// TestMakeDemoNarrates: `make demo` says what it builds and installs, and
// about how long that takes, before it does it (the first run takes
// minutes): a line before the go build, and one before npm ci.
func TestMakeDemoNarrates(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is not installed: the README's first commands need it")
	}
	// -n prints the commands without running them (a recursive $(MAKE)
	// runs, under -n too).
	bin := filepath.Join(t.TempDir(), "agentctl")
	cmd := exec.Command("make", "-n", "--no-print-directory", "demo", "BIN="+bin)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n demo: %v\n%s", err, out)
	}
	s := string(out)
	build := strings.Index(s, "go build")
	said := strings.Index(s, "make demo: go build of "+bin+"; the first build downloads the Go modules and compiles SQLite (a minute or two)")
	if build < 0 || said < 0 || said > build {
		t.Errorf("no narration before the go build:\n%s", s)
	}
	if npm := strings.Index(s, `echo "make demo: npm ci in testdata/tsclient`); npm < 0 || npm > strings.Index(s, "go mod download") {
		t.Errorf("no narration before npm ci:\n%s", s)
	}
}

// TestDemoScript runs testdata/demo.sh (what `make demo` runs once it has
// built) with the real binary: Auggie's and Claude Code's models see the
// built-in by the names they should, and each client's question is
// answered.
func TestDemoScript(t *testing.T) {
	t.Parallel()
	node, client := tsClientPaths()
	if node == "" {
		t.Fatal("the demo needs Node.js: install Node and npm, then `make deps`")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(client), "node_modules")); err != nil {
		t.Fatal("testdata/tsclient/node_modules is missing: run `make deps` (npm ci)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join("..", "..", "testdata", "demo.sh"), realBinary(t))
	cmd.Env = append(cleanEnviron(), "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo.sh: %v\n%s", err, out)
	}
	for want, n := range map[string]int{
		"ask_user_question             ->  ask_user_question_agentctl\n":                1,
		"ask_user_question_agentctl    ->  mcp__agentctl__ask_user_question_agentctl\n": 1,
		`ask_user_question answered: {"answer":"staging"`:                               2,
	} {
		if got := strings.Count(string(out), want); got != n {
			t.Errorf("demo.sh: %q %d times, want %d:\n%s", want, got, n, out)
		}
	}
}
