package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/spf13/cobra"
)

// run runs cmd (as its NewCmd function makes it) with args through cobra,
// with f's buffers emptied first, and returns stdout, the exit code
// agentctl would exit with and the error it would print.
func (f *testFactory) run(t *testing.T, cmd *cobra.Command, args ...string) (string, int, error) {
	t.Helper()
	f.reset()
	err := runCommand(f, cmd, args...)
	return f.out.String(), exitCode(context.Background(), err), err
}

// mustRun is [testFactory.run] that fails the test unless the command
// exits 0.
func (f *testFactory) mustRun(t *testing.T, cmd *cobra.Command, args ...string) string {
	t.Helper()
	out, code, err := f.run(t, cmd, args...)
	if code != 0 {
		t.Fatalf("%s %q: exit %d: %v\nstderr:\n%s", cmd.Name(), args, code, err, f.errOut)
	}
	return out
}

// createNamed creates an instance of agent labelled name ("" for none)
// through `instance create` and returns its id.
func (f *testFactory) createNamed(t *testing.T, agent, name string) string {
	t.Helper()
	args := []string{"--agent", agent, "--workspace", f.dir}
	if name != "" {
		args = append(args, "--name", name)
	}
	return strings.TrimSpace(f.mustRun(t, NewCmdInstanceCreate(f.Factory, nil), args...))
}

// terminal makes f's stdout a terminal of width columns, without colour.
func (f *testFactory) terminal(width int) {
	f.IOStreams.SetStdoutTTY(true)
	f.IOStreams.SetTerminalWidth(width)
}

// checkFits fails the test if a line of out is wider than width or a cell
// was cut with an ellipsis.
func checkFits(t *testing.T, what, out string, width int) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if w := ansi.StringWidth(line); w > width {
			t.Errorf("%s: a line of %d columns on a terminal of %d:\n%s", what, w, width, out)
			return
		}
	}
	if strings.Contains(out, "…") {
		t.Errorf("%s: a cell was cut:\n%s", what, out)
	}
}

// tableCells is the cells of a drawn table's rows, trimmed, the header
// row first (border lines left out).
func tableCells(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "│") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "│"), "│")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, cells)
	}
	return rows
}

// fakeIDs is a store's instance ids and labels, as [instance.Store.IDs]
// lists them.
type fakeIDs struct {
	ids    []string
	labels map[string]string // label → id
	err    error
}

func (r *fakeIDs) IDs(context.Context) (map[string]string, error) {
	if r.err != nil {
		return nil, r.err
	}
	out := map[string]string{}
	for _, id := range r.ids {
		out[id] = ""
	}
	for label, id := range r.labels {
		out[id] = label
	}
	return out, nil
}

// TestShortIDs: a prefix of at least 8 characters, unique among the
// listed ids and then among every stored one and its labels.
func TestShortIDs(t *testing.T) {
	const (
		a = "01kbq3w5x9a7c2d4e6f8g0h1j2"
		b = "01kbq3w5x9zzzzzzzzzzzzzzzz" // shares 10 characters with a
		c = "01kbq3w6y0b8d3e5f7g9h1j3k4" // shares 6
		d = "01kbq3w5aaaaaaaaaaaaaaaaaa" // shares 8 with a and b
	)
	for _, tc := range []struct {
		name   string
		listed []string
		store  *fakeIDs
		want   map[string]string
	}{
		{"at least 8 characters", []string{a, c}, &fakeIDs{ids: []string{a, c}},
			map[string]string{a: a[:8], c: c[:8]}},
		{"unique among the listed", []string{a, b, c}, &fakeIDs{ids: []string{a, b, c}},
			map[string]string{a: a[:11], b: b[:11], c: c[:8]}},
		{"unique among the stored, not only the listed", []string{a, c}, &fakeIDs{ids: []string{a, b, c, d}},
			map[string]string{a: a[:11], c: c[:8]}},
		{"not another instance's label", []string{c}, &fakeIDs{ids: []string{a, b, c}, labels: map[string]string{c[:8]: a, c[:9]: b}},
			map[string]string{c: c[:10]}},
		{"a store that fails: whole ids", []string{a}, &fakeIDs{err: errors.New("store down")},
			map[string]string{a: a}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := shortIDs(context.Background(), tc.store, tc.listed)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for id, want := range tc.want {
				if got[id] != want {
					t.Errorf("%s: %q, want %q", id, got[id], want)
				}
			}
		})
	}
}

// TestInstanceListAtEightyColumns: on an 80-column terminal instance list
// shows LABEL first, the shortest id prefix that `instance show` takes, the
// agent, the status and the open questions, nothing cut; the columns that
// do not fit are in -o wide, with whole ids; piped, the tab-separated form
// keeps its columns and whole ids.
func TestInstanceListAtEightyColumns(t *testing.T) {
	t.Parallel()
	f := newTestFactory(t, "NO_COLOR=1")
	ids := map[string]string{
		"fix-login": f.createNamed(t, "auggie", "fix-login"),
		"-":         f.createNamed(t, "vscode-copilot", ""),
		"a-label-long-enough-to-need-two-lines-on-80": f.createNamed(t, "claude-code", "a-label-long-enough-to-need-two-lines-on-80"),
	}
	f.terminal(80)
	out := f.mustRun(t, NewCmdInstanceList(f.Factory, nil))
	checkFits(t, "instance list", out, 80)
	rows := tableCells(out)
	if len(rows) != 5 || !slices.Equal(rows[0], []string{"LABEL", "ID", "AGENT", "STATUS", "QUESTIONS"}) {
		t.Fatalf("want the columns LABEL ID AGENT STATUS QUESTIONS and 3 rows, the long label on 2 lines:\n%s", out)
	}
	// The long label's second line.
	if rows[4][0] == "" || rows[4][1] != "" {
		t.Fatalf("want the long label's second line last:\n%s", out)
	}
	rows[3][0] += rows[4][0]
	rows = rows[:4]
	st, err := f.Store(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, r := range rows[1:] {
		id, ok := ids[r[0]]
		if !ok || len(r[1]) < minShortID || len(r[1]) >= len(id) || !strings.HasPrefix(id, r[1]) {
			t.Errorf("row %q: want a label of ours and a short prefix of its id %s", r, id)
			continue
		}
		if got, err := st.Get(context.Background(), r[1]); err != nil || got.ID != id {
			t.Errorf("instance show %s: %v, %v; want %s", r[1], got, err, id)
		}
	}

	out = f.mustRun(t, NewCmdInstanceList(f.Factory, nil), "-o", "wide")
	rows = tableCells(out)
	if len(rows) != 4 || !slices.Equal(rows[0], []string{"LABEL", "ID", "AGENT", "STATUS", "QUESTIONS", "CREATED", "WORKSPACE", "SERVER", "NAMESPACING"}) {
		t.Fatalf("-o wide: want every column:\n%s", out)
	}
	for _, r := range rows[1:] {
		if r[1] != ids[r[0]] {
			t.Errorf("-o wide: row %q, want the whole id %s", r, ids[r[0]])
		}
	}

	f.IOStreams.SetStdoutTTY(false)
	for _, args := range [][]string{nil, {"-o", "wide"}} {
		out = f.mustRun(t, NewCmdInstanceList(f.Factory, nil), args...)
		want := regexp.MustCompile(`^` + ids["fix-login"] + `\tfix-login\tauggie\tsuffix\tagentctl\t\S+\t` + regexp.QuoteMeta(f.dir) + `\t0\t-$`)
		if lines := strings.Split(out, "\n"); len(lines) != 4 || !want.MatchString(lines[0]) {
			t.Errorf("piped %q: the tab-separated form changed:\n%s", args, out)
		}
	}
}

// TestInstanceListShortIDsAreUniqueInTheStore: the prefix a filtered list
// shows names its instance among all those stored, not only among those
// listed.
func TestInstanceListShortIDsAreUniqueInTheStore(t *testing.T) {
	t.Parallel()
	f := newTestFactory(t, "NO_COLOR=1")
	var auggie string
	others := map[string]bool{}
	for range 4 {
		auggie = f.createNamed(t, "auggie", "")
		others[f.createNamed(t, "codex", "")] = true
	}
	f.terminal(80)
	out := f.mustRun(t, NewCmdInstanceList(f.Factory, nil), "--agent", "auggie", "--limit", "1")
	rows := tableCells(out)
	if len(rows) != 2 || !strings.HasPrefix(auggie, rows[1][1]) {
		t.Fatalf("want the last auggie instance %s:\n%s", auggie, out)
	}
	short := rows[1][1]
	for id := range others {
		if strings.HasPrefix(id, short) {
			t.Errorf("the shown prefix %s of %s is also %s's", short, auggie, id)
		}
	}
	f.IOStreams.SetStdoutTTY(false)
	if out := f.mustRun(t, NewCmdInstanceShow(f.Factory, nil), short, "--jq", ".id"); out != auggie+"\n" {
		t.Errorf("instance show %s: %q, want %s", short, out, auggie)
	}
}

// TestQuietListsPrintIDs: -q prints only ids, one a line, on a terminal
// too; it does not go with -o json or --jq.
func TestQuietListsPrintIDs(t *testing.T) {
	t.Parallel()
	f := newTestFactory(t, "NO_COLOR=1")
	a := f.createNamed(t, "auggie", "a")
	b := f.createNamed(t, "claude-code", "")
	st, err := f.Store(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	q1, err := st.AddQuestion(context.Background(), a, "Which database?", []string{"staging", "prod"})
	if err != nil {
		t.Fatal(err)
	}
	q2, err := st.AddQuestion(context.Background(), b, "Go on?", nil)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	f.terminal(80)
	for _, tc := range []struct {
		cmd  func() *cobra.Command
		args []string
		want string
	}{
		{func() *cobra.Command { return NewCmdInstanceList(f.Factory, nil) }, []string{"-q"}, a + "\n" + b + "\n"},
		{func() *cobra.Command { return NewCmdInstanceList(f.Factory, nil) }, []string{"--quiet", "--agent", "auggie"}, a + "\n"},
		{func() *cobra.Command { return NewCmdInstanceQuestions(f.Factory, nil) }, []string{"a", "-q"}, q1.ID + "\n"},
		{func() *cobra.Command { return NewCmdInstanceQuestions(f.Factory, nil) }, []string{"-q"}, q1.ID + "\n" + q2.ID + "\n"},
		{func() *cobra.Command { return NewCmdToolsList(f.Factory, nil) }, []string{"--agent", "claude-code", "-q"},
			"mcp__agentctl__ask_user_question_agentctl\nmcp__agentctl__get_instance_agentctl\nmcp__agentctl__report_progress_agentctl\n"},
	} {
		if out := f.mustRun(t, tc.cmd(), tc.args...); out != tc.want {
			t.Errorf("%s %q: %q, want %q", tc.cmd().CommandPath(), tc.args, out, tc.want)
		}
	}
	out := f.mustRun(t, NewCmdAgentsList(f.Factory, nil), "-q")
	if lines := strings.Split(out, "\n"); len(lines) < 10 || lines[0] != "auggie" || lines[1] != "claude-code" || strings.Contains(out, "\t") {
		t.Errorf("agents list -q: %q, want the ids alone", out)
	}
	for _, args := range [][]string{{"-q", "-o", "json"}, {"-q", "--jq", ".[]"}, {"-q", "-o", "wide"}} {
		if _, code, err := f.run(t, NewCmdInstanceList(f.Factory, nil), args...); code != ExitUsage || !strings.Contains(fmt.Sprint(err), "--quiet prints only ids") {
			t.Errorf("instance list %q: exit %d (%v), want %d", args, code, err, ExitUsage)
		}
	}
}

// TestAgentsListAtEightyColumns: the ids and templates, whole, on 80
// columns; NAMESPACING (which the template says) moves to -o wide.
func TestAgentsListAtEightyColumns(t *testing.T) {
	t.Parallel()
	f := newTestFactory(t, "NO_COLOR=1")
	f.terminal(80)
	out := f.mustRun(t, NewCmdAgentsList(f.Factory, nil))
	checkFits(t, "agents list", out, 80)
	rows := tableCells(out)
	if !slices.Equal(rows[0], []string{"ID", "NAME", "TEMPLATE", "SOURCE"}) || !slices.ContainsFunc(rows, func(r []string) bool {
		return slices.Equal(r, []string{"vscode-copilot", "VS Code Copilot Chat", "mcp_{server}_{tool}", "catalog"})
	}) {
		t.Errorf("agents list on 80 columns:\n%s", out)
	}
	out = f.mustRun(t, NewCmdAgentsList(f.Factory, nil), "-o", "wide")
	if rows := tableCells(out); !slices.Equal(rows[0], []string{"ID", "NAME", "NAMESPACING", "TEMPLATE", "SOURCE"}) {
		t.Errorf("agents list -o wide:\n%s", out)
	}
}

// TestToolsListKeepsWholeNames: on a terminal too narrow for its table,
// tools list prints a block per tool with every name whole; on a wide one,
// or with -o wide, the table.
func TestToolsListKeepsWholeNames(t *testing.T) {
	t.Parallel()
	f := newTestFactory(t, "NO_COLOR=1")
	f.terminal(80)
	out := f.mustRun(t, NewCmdToolsList(f.Factory, nil), "--agent", "claude-code", "--kb", "docs="+f.dir)
	checkFits(t, "tools list", out, 80)
	for _, want := range []string{
		"ask_user_question_agentctl\n  sent:       ask_user_question_agentctl\n  model sees: mcp__agentctl__ask_user_question_agentctl\n  source:     built-in\n  length:     41 of 64\n",
		"concept_read\n  sent:       concept_read\n  model sees: mcp__agentctl__concept_read\n  source:     kb docs, prefix single-mount\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("on 80 columns, no block\n%s\nin\n%s", want, out)
		}
	}
	out = f.mustRun(t, NewCmdToolsList(f.Factory, nil), "--agent", "all", "--kb", "docs="+f.dir)
	checkFits(t, "tools list --agent all", out, 80)
	if !strings.Contains(out, "codex: get_instance_agentctl\n  sent:       get_instance_agentctl\n  model sees: mcp__agentctl/get_instance_agentctl\n") {
		t.Errorf("--agent all: no block titled with the agent:\n%s", out)
	}
	for _, tc := range []struct {
		width int
		args  []string
	}{{200, nil}, {80, []string{"-o", "wide"}}} {
		f.IOStreams.SetTerminalWidth(tc.width)
		out = f.mustRun(t, NewCmdToolsList(f.Factory, nil), append([]string{"--agent", "claude-code"}, tc.args...)...)
		if rows := tableCells(out); len(rows) != 4 || rows[0][0] != "CANONICAL" || rows[1][2] != "mcp__agentctl__ask_user_question_agentctl" {
			t.Errorf("width %d %q: want the table:\n%s", tc.width, tc.args, out)
		}
	}
}

// TestQuestionsAtEightyColumns: a long question wraps, whole, within 80
// columns; the inbox names an unlabelled instance by its short id.
func TestQuestionsAtEightyColumns(t *testing.T) {
	t.Parallel()
	f := newTestFactory(t, "NO_COLOR=1")
	id := f.createNamed(t, "auggie", "")
	st, err := f.Store(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	text := "Which of the two databases should the login test run against, given that staging was reset this morning?"
	q, err := st.AddQuestion(context.Background(), id, text, []string{"staging", "production"})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	f.terminal(80)
	for _, args := range [][]string{{id}, nil} {
		out := f.mustRun(t, NewCmdInstanceQuestions(f.Factory, nil), args...)
		checkFits(t, "instance questions", out, 80)
		if !strings.Contains(out, q.ID) || !strings.Contains(strings.Join(strings.Fields(columnOf(out, "QUESTION")), " "), text) {
			t.Errorf("instance questions %q: the question or its id not whole:\n%s", args, out)
		}
		if args == nil && !strings.Contains(out, "│ "+id[:minShortID]+" ") {
			t.Errorf("the inbox: no short id of %s:\n%s", id, out)
		}
	}
}

// columnOf is the text of the column headed header in a drawn table, its
// lines joined with spaces.
func columnOf(out, header string) string {
	rows := tableCells(out)
	if len(rows) == 0 {
		return ""
	}
	col := slices.Index(rows[0], header)
	var parts []string
	for _, r := range rows[1:] {
		if col >= 0 && col < len(r) && r[col] != "" {
			parts = append(parts, r[col])
		}
	}
	return strings.Join(parts, " ")
}

// TestListsAtARealEightyColumnTerminal: the same through a real terminal
// of 80 columns (util-linux's script(1) gives the binary one, stty sets
// its width), and with COLUMNS=80 on a wider one.
func TestListsAtARealEightyColumnTerminal(t *testing.T) {
	t.Parallel()
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Fatal("script(1) gives the command a terminal: apt-get install bsdutils (util-linux on newer systems)")
	}
	bin := realBinary(t)
	f := newTestFactory(t)
	id := f.createNamed(t, "auggie", "fix-login")
	f.createNamed(t, "claude-code", "")
	// COLUMNS is given to agentctl alone: the shell that script(1) starts
	// would set its own after stty (bash's checkwinsize).
	for _, tc := range []struct{ stty, columns string }{{"stty cols 80 rows 40", ""}, {"stty cols 200 rows 40", "COLUMNS=80"}} {
		line := tc.stty + "; env " + tc.columns + " " + bin + " instance list; env " + tc.columns + " " + bin + " tools list --agent claude-code"
		cmd := exec.Command(scriptBin, "-qec", line, "/dev/null")
		cmd.Env = append(cleanEnviron(), "AGENTCTL_STATE_DIR="+f.Config.StateDir(), "HOME="+f.dir,
			"XDG_CONFIG_HOME="+filepath.Join(f.dir, "cfg"), "NO_COLOR=1", "TERM=xterm")
		b, err := cmd.CombinedOutput()
		out := strings.ReplaceAll(string(b), "\r\n", "\n")
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		checkFits(t, tc.stty+" "+tc.columns, out, 80)
		if !strings.Contains(out, "│ LABEL ") || !regexp.MustCompile(`│ fix-login +│ `+id[:minShortID]+`\w* +│ auggie`).MatchString(out) ||
			strings.Contains(out, id) || !strings.Contains(out, "  model sees: mcp__agentctl__ask_user_question_agentctl\n") {
			t.Errorf("%s %s: want the fitted list and tools' blocks:\n%s", tc.stty, tc.columns, out)
		}
	}
}

// TestQuestionsWait: --wait lists once a question is open, and not before;
// for one instance, that instance's.
func TestQuestionsWait(t *testing.T) {
	t.Parallel()
	f := newTestFactory(t, "NO_COLOR=1")
	a := f.createNamed(t, "auggie", "a")
	b := f.createNamed(t, "auggie", "b")
	ctx := context.Background()
	for _, tc := range []struct{ instance, asker string }{{"a", b}, {"", ""}} {
		f.reset()
		done := make(chan error, 1)
		go func() {
			done <- instanceQuestionsRun(ctx, &InstanceQuestionsOptions{IO: f.IOStreams, Store: f.Store, Instance: tc.instance,
				Output: formatJSON, Wait: true, Poll: 10 * time.Millisecond})
		}()
		st, err := f.Store(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		if tc.asker != "" {
			// Another instance's question is not this one's.
			if _, err := st.AddQuestion(ctx, tc.asker, "Not yours?", nil); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case err := <-done:
			t.Fatalf("questions %q --wait returned before a question: %v %q", tc.instance, err, f.out.String())
		case <-time.After(300 * time.Millisecond):
		}
		q, err := st.AddQuestion(ctx, a, "Which database?", nil)
		st.Close()
		if err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil || !strings.Contains(f.out.String(), q.ID) {
				t.Errorf("questions %q --wait: %v %q, want %s", tc.instance, err, f.out.String(), q.ID)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("questions %q --wait did not return once a question was asked", tc.instance)
		}
		// Answer them all, for the next case.
		st, _ = f.Store(ctx, false)
		for _, id := range []string{a, b} {
			qs, _ := st.Questions(ctx, id, false)
			for _, q := range qs {
				if _, err := st.Answer(ctx, id, q.ID, "ok", true); err != nil {
					t.Fatal(err)
				}
			}
		}
		st.Close()
	}
}
