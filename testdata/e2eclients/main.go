// Command e2eclients runs each catalog client's real program, pinned and
// installed from npm into a cache outside the repository, through
// `agentctl instance run` against a fake model API, and writes the matrix of
// what worked to docs/CLIENTS.md (make e2e-clients).
//
//	go run ./testdata/e2eclients -out docs/CLIENTS.md
//	go run ./testdata/e2eclients -clients claude-code -transports stdio -out /tmp/c.md
//	go run ./testdata/e2eclients -serve   # only the fake model, to point a client at by hand
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

func main() {
	var (
		out        = flag.String("out", "docs/CLIENTS.md", "the report to write")
		only       = flag.String("clients", "", "comma-separated catalog ids to run (default: every registered client)")
		transports = flag.String("transports", "stdio,http", "comma-separated transports: stdio, http")
		cache      = flag.String("cache", "", "where pinned client packages are installed (default $XDG_CACHE_HOME/agentctl/e2e-clients)")
		agentctl   = flag.String("agentctl", "", "the agentctl binary to test (default: build ./cmd/agentctl)")
		timeout    = flag.Duration("timeout", 4*time.Minute, "how long one client run may take before its process group is killed")
		keep       = flag.Bool("keep", false, "keep every run's throwaway directory (those of failed runs are always kept)")
		workdir    = flag.String("workdir", "", "where runs' throwaway directories are made (default CACHE/runs; under /tmp Gemini CLI ignores agentctl's settings file)")
		serve      = flag.Bool("serve", false, "only serve the fake model API, logging what it sees, until interrupted")
	)
	flag.Parse()
	if *serve {
		if err := serveOnly(); err != nil {
			fatal(err)
		}
		return
	}
	if err := runMatrix(*out, split(*only), split(*transports), *cache, *agentctl, *workdir, *timeout, *keep); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "e2eclients:", err)
	os.Exit(1)
}

func split(s string) []string {
	var parts []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			parts = append(parts, p)
		}
	}
	return parts
}

func serveOnly() error {
	m := NewModel()
	m.Log = os.Stderr
	api, err := startFakeAPI(m)
	if err != nil {
		return err
	}
	fmt.Println(api.URL)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	return api.Close()
}

func runMatrix(out string, only, transports []string, cache, agentctl, workdir string, timeout time.Duration, keep bool) error {
	for _, t := range transports {
		if t != "stdio" && t != "http" {
			return fmt.Errorf("unknown transport %q (stdio, http)", t)
		}
	}
	selected, err := selectClients(only)
	if err != nil {
		return err
	}
	if cache == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return err
		}
		cache = filepath.Join(dir, "agentctl", "e2e-clients")
	}
	if cache, err = filepath.Abs(cache); err != nil {
		return err
	}
	if agentctl == "" {
		dir, err := os.MkdirTemp("", "agentctl-e2e-bin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		agentctl = filepath.Join(dir, "agentctl")
		fmt.Fprintln(os.Stderr, "building ./cmd/agentctl")
		ldflags := "-X main.commit=" + commandOutput("git", "rev-parse", "HEAD")
		if b, err := exec.Command("go", "build", "-ldflags", ldflags, "-o", agentctl, "./cmd/agentctl").CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/agentctl: %v\n%s", err, b)
		}
	}
	if agentctl, err = filepath.Abs(agentctl); err != nil {
		return err
	}
	if workdir == "" {
		workdir = filepath.Join(cache, "runs")
	}
	if workdir, err = filepath.Abs(workdir); err != nil {
		return err
	}
	if err := os.MkdirAll(workdir, 0o700); err != nil {
		return err
	}
	h := &harness{agentctl: agentctl, cache: cache, workdir: workdir, timeout: timeout, keep: keep, log: os.Stderr, groups: map[int]bool{}}
	// Interrupted, take down the clients and servers started so far: they
	// run in process groups of their own, out of reach of the terminal.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		h.killGroups()
		fmt.Fprintln(os.Stderr, "e2eclients: interrupted; killed the clients and servers it had started")
		os.Exit(128 + int(s.(syscall.Signal)))
	}()

	rep := report{
		command:  commandLine(only, transports, timeout),
		date:     time.Now().UTC(),
		commit:   gitCommit(),
		agentctl: commandOutput(agentctl, "version"),
		node:     commandOutput("node", "--version"),
	}
	for _, c := range selected {
		if c.NotRunnable != "" {
			rep.notRun = append(rep.notRun, c)
			continue
		}
		for _, t := range transports {
			fmt.Fprintf(os.Stderr, "running %s over %s\n", clientLabel(c), t)
			res := h.run(c, t)
			fmt.Fprintf(os.Stderr, "  %s\n", res.summary())
			rep.runs = append(rep.runs, res)
		}
	}
	return os.WriteFile(out, []byte(rep.markdown()), 0o644)
}

// selectClients are the registered clients with the given ids (all when none
// are given), sorted by id, a client's variants in registration order.
func selectClients(only []string) ([]Client, error) {
	known := map[string]bool{}
	for _, c := range clients {
		known[c.ID] = true
	}
	want := map[string]bool{}
	for _, id := range only {
		if !known[id] {
			return nil, fmt.Errorf("no client %q is registered", id)
		}
		want[id] = true
	}
	var selected []Client
	for _, c := range clients {
		if len(want) == 0 || want[c.ID] {
			selected = append(selected, c)
		}
	}
	sort.SliceStable(selected, func(i, j int) bool { return selected[i].ID < selected[j].ID })
	return selected, nil
}

// commandLine is how the report was produced, without machine-specific paths.
func commandLine(only, transports []string, timeout time.Duration) string {
	cmd := "go run ./testdata/e2eclients"
	if len(only) > 0 {
		cmd += " -clients " + strings.Join(only, ",")
	}
	return cmd + " -transports " + strings.Join(transports, ",") + " -timeout " + timeout.String()
}

// commandOutput is a command's trimmed stdout, or "unknown" if it failed.
func commandOutput(name string, args ...string) string {
	b, err := exec.Command(name, args...).Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// gitCommit is the commit of the working tree agentctl was built from, marked
// when it has uncommitted changes.
func gitCommit() string {
	commit := commandOutput("git", "rev-parse", "--short=12", "HEAD")
	if status := commandOutput("git", "status", "--porcelain", "--untracked-files=no"); status != "" && status != "unknown" {
		commit += " (with uncommitted changes)"
	}
	return commit
}

func clientLabel(c Client) string {
	if c.Variant == "" {
		return c.ID
	}
	return c.ID + " (" + c.Variant + ")"
}

// report is the matrix written to docs/CLIENTS.md.
type report struct {
	command  string
	date     time.Time
	commit   string // the working tree's
	agentctl string // agentctl version
	node     string
	runs     []runResult
	notRun   []Client
}

func (r runResult) summary() string {
	var parts []string
	for i, c := range r.checks {
		parts = append(parts, checkTitles[i]+" "+c.outcome.mark())
	}
	return strings.Join(parts, ", ")
}

func (o outcome) mark() string {
	switch o {
	case passed:
		return "✓"
	case failed:
		return "✗"
	}
	return "—"
}

// codeList formats names as a comma-separated list of code spans.
func codeList(names []string) string {
	if len(names) == 0 {
		return "—"
	}
	return "`" + strings.Join(names, "`, `") + "`"
}

// cell makes text safe inside a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ", "\r", " ").Replace(s)
}

func (rep report) markdown() string {
	var b strings.Builder
	b.WriteString("# Real clients against agentctl\n\n")
	fmt.Fprintf(&b, "Produced by `%s` (`make e2e-clients`) on %s in a working tree at commit %s, with %s and Node.js %s.\n\n",
		rep.command, rep.date.Format("2006-01-02 15:04 UTC"), rep.commit, rep.agentctl, rep.node)
	b.WriteString("Each client's real program, at its pinned version, is installed from npm into a cache outside the " +
		"repository and runs offline through `agentctl instance run ID --prompt ...`, its model API pointed at a fake " +
		"model (testdata/e2eclients) that speaks the client's API. The fake model finds the ask tool among the tools " +
		"the client declared (first calling the client's tool-search tool when the client defers MCP tools behind one, " +
		"and calling it through the client's bridge tool when the search only describes it), " +
		"calls it by the name it was declared under with the question \"" + askQuestion + "\", and, once the tool's " +
		"result comes back, ends the turn with a text quoting it. Meanwhile the harness, as a person would, watches " +
		"`agentctl instance questions ID` and answers `" + askAnswer + "` with `agentctl instance answer`.\n\n")
	b.WriteString("Checks: **name = `tools list`**: the ask tool reached the model under the name " +
		"`agentctl tools list --instance ID` predicts; **question shown**: the question appeared in " +
		"`agentctl instance questions`; **answer reached model**: the tool result the client sent back contains `" +
		askAnswer + "`; **run exit 0**: `agentctl instance run` exited 0; **wait done**: " +
		"`agentctl instance wait ID --status done --timeout 30s` exited 0; **status done**: the instance's latest " +
		"recorded status is done. — means the check could not be made.\n\n")
	b.WriteString("Transport stdio: the client starts `agentctl mcp serve`; http: the instance is created with " +
		"`--transport http` and served by one `agentctl serve` on a loopback port.\n\n")

	b.WriteString("| Client | Package | Model API | Transport | Ask tool as the model saw it |")
	for _, t := range checkTitles {
		b.WriteString(" " + t + " |")
	}
	b.WriteString(" Why not ✓ |\n|---|---|---|---|---|")
	for range checkTitles {
		b.WriteString(":-:|")
	}
	b.WriteString("---|\n")
	for _, r := range rep.runs {
		version := r.version
		if version == "" {
			version = r.client.Version
		}
		seen := "—"
		if r.observed != "" {
			seen = "`" + r.observed + "`"
			switch {
			case r.bridge != "":
				seen += " (found with " + r.toolSearch + ", called through " + r.bridge + ")"
			case r.toolSearch != "":
				seen += " (loaded with " + r.toolSearch + ")"
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |", cell(clientLabel(r.client)), cell(r.client.Package+"@"+version),
			cell(r.client.Protocol), r.transport, cell(seen))
		var why []string
		for i, c := range r.checks {
			b.WriteString(" " + c.outcome.mark() + " |")
			if c.outcome == failed {
				why = append(why, checkTitles[i]+": "+c.reason)
			}
		}
		why = append(why, r.notes...)
		if r.client.KnownIssue != "" && runFailed(r) {
			why = append(why, "known issue: "+r.client.KnownIssue)
		}
		fmt.Fprintf(&b, " %s |\n", cell(strings.Join(why, "; ")))
	}
	b.WriteString("\n## How each client is pointed at the fake model\n\n" +
		"What the harness sets in each client's throwaway world (testdata/e2eclients/client_*.go), besides the " +
		"configuration `agentctl instance create` and `instance run` give it.\n\n" +
		"| Client | Environment | Files written |\n|---|---|---|\n")
	described := map[string]bool{}
	for _, r := range rep.runs {
		label := clientLabel(r.client)
		if described[label] || (len(r.setupEnv) == 0 && len(r.setupFiles) == 0) {
			continue
		}
		described[label] = true
		fmt.Fprintf(&b, "| %s | %s | %s |\n", cell(label), cell(codeList(r.setupEnv)), cell(codeList(r.setupFiles)))
	}
	if len(rep.notRun) > 0 {
		b.WriteString("\n## Not run here\n\n| Client | What keeps it out |\n|---|---|\n")
		for _, c := range rep.notRun {
			fmt.Fprintf(&b, "| %s | %s |\n", cell(clientLabel(c)), cell(c.NotRunnable))
		}
	}
	return b.String()
}
