package mcpserver

import (
	"strings"
	"testing"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/mcpserver/mount"
)

// Client namings as the catalog has them (agents/catalog/*.toml).
var (
	kiroNaming   = agents.ToolNaming{Namespacing: agents.NamespacingNone, Template: "{tool}", MaxLength: 64, Charset: "^[A-Za-z][A-Za-z0-9_]*$"}
	cursorNaming = agents.ToolNaming{Namespacing: agents.NamespacingNone, Template: "{tool}", MaxLength: 60, Charset: agents.DefaultCharset, CombinedMaxLength: 60}
	vscodeNaming = agents.ToolNaming{Namespacing: agents.NamespacingPrefix, Template: "mcp_{server}_{tool}", MaxLength: 64, Charset: agents.DefaultCharset, ServerMaxLength: 13}
)

// describe resolves mounts (knowledge bases and servers) and describes
// them with the servers' listings: server name -> its tools.
func describe(t *testing.T, server string, naming agents.ToolNaming, mode mount.PrefixMode, specs []mount.Mount, tools map[string][]string) Description {
	t.Helper()
	for i := range specs {
		if specs[i].Kind == mount.KindKB {
			specs[i].Path = "/kb/" + specs[i].Name
		} else {
			specs[i].Kind, specs[i].Command = mount.KindServer, "srv"
		}
	}
	rs, err := mount.Resolve(server, mode, specs)
	if err != nil {
		t.Fatal(err)
	}
	var ls []ServerListing
	for name, ts := range tools {
		ls = append(ls, ServerListing{Mount: name, State: ListingUp, Tools: ts})
	}
	d, err := DescribeTools(server, naming, rs, ls)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func row(t *testing.T, d Description, canonical string) ToolRow {
	t.Helper()
	for _, r := range d.Tools {
		if r.Canonical == canonical {
			return r
		}
	}
	t.Fatalf("no tool %s in %+v", canonical, d.Tools)
	return ToolRow{}
}

// finding returns the one finding with code of r, failing otherwise.
func finding(t *testing.T, r ToolRow, code string) Finding {
	t.Helper()
	var got []Finding
	for _, f := range r.Findings {
		if f.Code == code {
			got = append(got, f)
		}
	}
	if len(got) != 1 {
		t.Fatalf("%s: want one %s finding, got %+v", r.Canonical, code, r.Findings)
	}
	return got[0]
}

func wantIn(t *testing.T, what, text string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(text, s) {
			t.Errorf("%s %q lacks %q", what, text, s)
		}
	}
}

func TestLintTooLong(t *testing.T) {
	claude := namings[agents.NamespacingPrefix]
	d := describe(t, "agentctl", claude, mount.PrefixModeMountName,
		[]mount.Mount{{Kind: mount.KindKB, Name: "docs", ToolPrefix: "engineering_handbook_runbooks"}, {Kind: mount.KindKB, Name: "notes"}}, nil)
	r := row(t, d, "engineering_handbook_runbooks__concept_search")
	// mcp__agentctl__engineering_handbook_runbooks__concept_search: 60.
	if r.Length != 60 || r.MaxLength != 64 || len(r.Findings) != 0 {
		t.Fatalf("%+v", r)
	}
	d = describe(t, "agentctl_tools", claude, mount.PrefixModeMountName,
		[]mount.Mount{{Kind: mount.KindKB, Name: "docs", ToolPrefix: "engineering_handbook_runbooks"}, {Kind: mount.KindKB, Name: "notes"}}, nil)
	r = row(t, d, "engineering_handbook_runbooks__concept_search")
	f := finding(t, r, FindingTooLong)
	wantIn(t, "problem", f.Problem, "66 characters, 2 over the client's max_length of 64")
	// The longest part first: the prefix.
	wantIn(t, "fix", f.Fix, `shorten by at least 2 characters the prefix "engineering_handbook_runbooks" (29 characters): give mount "docs" a shorter tool_prefix; or the server name "agentctl_tools"`)
	if f.Severity != SeverityError || r.Status != StatusServed {
		t.Fatalf("%+v", r)
	}
}

func TestLintCharset(t *testing.T) {
	d := describe(t, "agentctl", kiroNaming, mount.PrefixModeMountName,
		[]mount.Mount{{Name: "web"}}, map[string][]string{"web": {"get-page", "search"}})
	f := finding(t, row(t, d, "get-page"), FindingCharset)
	wantIn(t, "problem", f.Problem, `"get-page" contains '-', outside the client's charset ^[A-Za-z][A-Za-z0-9_]*$; the client shows it as "get_page"`)
	wantIn(t, "fix", f.Fix, `rename the tool in MCP server "web"`)
	if fs := row(t, d, "search").Findings; len(fs) != 0 {
		t.Fatalf("search: %+v", fs)
	}
}

// TestLintCharsetQuotesCodexNames: for a client that sends a name's parts
// apart (Codex: mcp__{server}/{tool}), the charset is each part's, and the
// finding quotes the name with its separator, as the client shows it.
func TestLintCharsetQuotesCodexNames(t *testing.T) {
	codex := agents.ToolNaming{Namespacing: agents.NamespacingPrefix, Template: "mcp__{server}/{tool}", MaxLength: 64,
		Charset: agents.DefaultCharset, PartSeparator: "/"}
	d := describe(t, "agentctl", codex, mount.PrefixModeMountName,
		[]mount.Mount{{Name: "web"}}, map[string][]string{"web": {"bad.name"}})
	f := finding(t, row(t, d, "bad.name"), FindingCharset)
	wantIn(t, "problem", f.Problem, `"mcp__agentctl/bad.name" contains '.'`)
}

func TestLintRenderedAlike(t *testing.T) {
	t.Run("sanitising", func(t *testing.T) {
		d := describe(t, "agentctl", kiroNaming, mount.PrefixModeMountName,
			[]mount.Mount{{Name: "web"}}, map[string][]string{"web": {"get-page", "get_page"}})
		f := finding(t, row(t, d, "get_page"), FindingCollision)
		wantIn(t, "problem", f.Problem, `the client shows get-page as "get_page" too (from mcp web, after the client's sanitising)`, "none of them is served")
		wantIn(t, "fix", f.Fix, `rename the tool in the server of mount "web"`)
		finding(t, row(t, d, "get-page"), FindingCollision)
		// As the endpoint does: neither is served.
		for _, n := range []string{"get_page", "get-page"} {
			if r := row(t, d, n); r.Status != StatusWithheld {
				t.Errorf("%s: status %q, want withheld", n, r.Status)
			}
		}
	})
	t.Run("VS Code's cut of the server name", func(t *testing.T) {
		d := describe(t, "agentctl-frontend", vscodeNaming, mount.PrefixModeMountName,
			[]mount.Mount{{Name: "web"}}, map[string][]string{"web": {"page.get", "page_get"}})
		r := row(t, d, "page_get")
		if r.ModelVisible != "mcp_agentctl-fron_page_get" {
			t.Fatalf("model-visible %q", r.ModelVisible)
		}
		f := finding(t, r, FindingCollision)
		wantIn(t, "problem", f.Problem, `the client shows page.get as "mcp_agentctl-fron_page_get" too`, "cut of the server name to 13 characters")
	})
	t.Run("an external tool that reaches the model as a built-in (Auggie)", func(t *testing.T) {
		auggie := namings[agents.NamespacingSuffix]
		d := describe(t, "agentctl", auggie, mount.PrefixModeMountName,
			[]mount.Mount{{Name: "asker"}}, map[string][]string{"asker": {"ask_user_question", "other"}})
		ext := row(t, d, "ask_user_question")
		if ext.Status != StatusWithheld || ext.ModelVisible != "ask_user_question_agentctl" {
			t.Fatalf("%+v", ext)
		}
		f := finding(t, ext, FindingTakesInProcess)
		wantIn(t, "problem", f.Problem, `"ask_user_question" is also the built-in tool ask_user_question_agentctl's (the model sees both as "ask_user_question_agentctl")`, "ask_user_question_agentctl keeps its name")
		wantIn(t, "fix", f.Fix, `give mount "asker" a tool_prefix`)
		// The built-in keeps its names and has no problem.
		b := row(t, d, "ask_user_question_agentctl")
		if b.Status != StatusServed || b.Transport != "ask_user_question" || b.ModelVisible != "ask_user_question_agentctl" || len(b.Findings) != 0 {
			t.Fatalf("%+v", b)
		}
		if r := row(t, d, "other"); r.Status != StatusServed {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("the same on Claude Code is fine", func(t *testing.T) {
		d := describe(t, "agentctl", namings[agents.NamespacingPrefix], mount.PrefixModeMountName,
			[]mount.Mount{{Name: "asker"}}, map[string][]string{"asker": {"ask_user_question"}})
		if r := row(t, d, "ask_user_question"); r.Status != StatusServed || len(r.Findings) != 0 || len(d.Findings) != 0 {
			t.Fatalf("%+v %+v", r, d.Findings)
		}
	})
	t.Run("an external tool with a built-in's canonical name", func(t *testing.T) {
		d := describe(t, "agentctl", namings[agents.NamespacingNone], mount.PrefixModeMountName,
			[]mount.Mount{{Name: "asker"}}, map[string][]string{"asker": {"get_instance_agentctl"}})
		var ext ToolRow
		for _, r := range d.Tools {
			if r.Kind == KindServer {
				ext = r
			}
		}
		if ext.Status != StatusWithheld || !strings.Contains(finding(t, ext, FindingTakesInProcess).Problem, `canonical name "get_instance_agentctl"`) {
			t.Fatalf("%+v", ext)
		}
	})
}

func TestLintHidden(t *testing.T) {
	long := "create_pull_request_review_comment_reply_thread_x" // 49
	// Cursor drops a tool whose server and tool names are over 60 together.
	d := describe(t, "agentctl", cursorNaming, mount.PrefixModeMountName,
		[]mount.Mount{{Name: "gh"}}, map[string][]string{"gh": {long}})
	if fs := row(t, d, long).Findings; len(fs) != 0 { // 57
		t.Fatalf("%+v", fs)
	}
	d = describe(t, "agentctl_cicd", cursorNaming, mount.PrefixModeMountName,
		[]mount.Mount{{Name: "gh"}}, map[string][]string{"gh": {long, "create_issue"}})
	f := finding(t, row(t, d, long), FindingHidden)
	wantIn(t, "problem", f.Problem, "the client drops a tool whose server name and tool name are over 60 characters together", `"agentctl_cicd" and "`+long+`" are 62`)
	wantIn(t, "fix", f.Fix, "shorten by at least 2 characters", `the tool "`+long+`"`, `the server name "agentctl_cicd"`)
	if fs := row(t, d, "create_issue").Findings; len(fs) != 0 {
		t.Fatalf("%+v", fs)
	}
}

// TestLintAmbiguousBare: two knowledge bases share their tools' bare
// names; that alone is no finding (the texts agentctl writes name every
// tool in full, and the endpoint never resolves a bare name), but a text
// that uses one is a warning.
func TestLintAmbiguousBare(t *testing.T) {
	d := describe(t, "agentctl", namings[agents.NamespacingPrefix], mount.PrefixModeMountName,
		[]mount.Mount{{Kind: mount.KindKB, Name: "team docs"}, {Kind: mount.KindKB, Name: "runbooks", ReadOnly: true}}, nil)
	if len(d.Findings) != 0 {
		t.Fatalf("findings without a text: %+v", d.Findings)
	}
	got := LintTexts(d.Tools, []Text{{File: "skills/x.md", Body: "Read with `concept_read`, then write with concept_write.\n", Template: "templates/skills/x.md"}})
	// concept_read is both knowledge bases'; concept_write is team_docs'
	// alone. In the order they appear.
	if len(got) != 2 || got[0].Code != FindingAmbiguousBare || got[0].Tool != "concept_read" || got[0].Severity != SeverityWarning || got[0].Source != "skills/x.md" {
		t.Fatalf("%+v", got)
	}
	wantIn(t, "problem", got[0].Problem, `line 1 names "concept_read", the unprefixed form of runbooks__concept_read and team_docs__concept_read`)
	wantIn(t, "fix", got[0].Fix, "{{tool:runbooks/concept_read}} or {{tool:team docs/concept_read}} in the template templates/skills/x.md")
	if got[1].Code != FindingUnseenName || got[1].Tool != "team_docs__concept_write" {
		t.Fatalf("%+v", got[1])
	}
}

func TestLintServerDown(t *testing.T) {
	rs, err := mount.Resolve("agentctl", mount.PrefixModeMountName, []mount.Mount{{Kind: mount.KindServer, Name: "web", Command: "nosuch"}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := DescribeTools("agentctl", namings[agents.NamespacingPrefix], rs, []ServerListing{{Mount: "web", State: ListingDown, Error: "exec: not found"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Servers) != 1 || d.Servers[0].State != ListingDown || len(d.Findings) != 1 || d.Findings[0].Code != FindingServerDown {
		t.Fatalf("%+v %+v", d.Servers, d.Findings)
	}
	wantIn(t, "problem", d.Findings[0].Problem, "exec: not found")
}

func TestStaleCapability(t *testing.T) {
	stored := namings[agents.NamespacingSuffix]
	if _, ok := StaleCapability("01abc", "auggie", stored, stored); ok {
		t.Fatal("same capability reported")
	}
	now := stored
	now.MaxLength, now.Template = 48, "{tool}__{server}"
	f, ok := StaleCapability("01abc", "auggie", stored, now)
	if !ok || f.Source != "instance 01abc" || f.Code != FindingStale {
		t.Fatalf("%+v", f)
	}
	wantIn(t, "problem", f.Problem, `template "{tool}_{server}" -> "{tool}__{server}"`, "max_length 64 -> 48")
	wantIn(t, "fix", f.Fix, "agentctl instance delete 01abc", "instance create --agent auggie")
}

func TestDescribeWithholdsExternalCollisions(t *testing.T) {
	// Two unprefixed servers that offer one name: neither is served.
	d := describe(t, "agentctl", namings[agents.NamespacingPrefix], mount.PrefixModeOff,
		[]mount.Mount{{Name: "a"}, {Name: "b"}}, map[string][]string{"a": {"fetch", "only_a"}, "b": {"fetch"}})
	var fetches int
	for _, r := range d.Tools {
		if r.Canonical != "fetch" {
			continue
		}
		fetches++
		f := finding(t, r, FindingCollision)
		if r.Status != StatusWithheld || !strings.Contains(f.Problem, `mcp a and mcp b offer "fetch"; none of them is served`) {
			t.Fatalf("%+v", r)
		}
	}
	if fetches != 2 || row(t, d, "only_a").Status != StatusServed {
		t.Fatalf("%+v", d.Tools)
	}
	// A name the MCP rules refuse is withheld too.
	d = describe(t, "agentctl", namings[agents.NamespacingPrefix], mount.PrefixModeMountName,
		[]mount.Mount{{Name: "a"}}, map[string][]string{"a": {"bad name"}})
	r := row(t, d, "bad name")
	if f := finding(t, r, FindingInvalidName); r.Status != StatusWithheld || !strings.Contains(f.Problem, "the endpoint does not serve it") {
		t.Fatalf("%+v", r)
	}
}
