package main

// Tests that drive the real agentctl binary with an independent MCP client:
// the official TypeScript SDK (testdata/tsclient/client.mjs). The endpoint is
// started exactly as a client would start it, from the native MCP
// configuration file that `instance create` wrote.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// ---------------------------------------------------------------------------
// Tests.

func TestRealClientAuggieAndClaudeCode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		agent, file string
		// transport names, by base
		ask, progress, get string
		// model-visible name of a canonical name
		modelSees func(canonical string) string
	}{
		{
			agent: "auggie", file: "mcp.json",
			ask: "ask_user_question", progress: "report_progress", get: "get_instance",
			modelSees: func(c string) string { return c },
		},
		{
			agent: "claude-code", file: ".mcp.json",
			ask: "ask_user_question_agentctl", progress: "report_progress_agentctl", get: "get_instance_agentctl",
			modelSees: func(c string) string { return "mcp__agentctl__" + c },
		},
	}
	for _, tc := range cases {
		t.Run(tc.agent, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
			defer cancel()
			e := newRCEnv(t)
			rec := e.create(ctx, "--agent", tc.agent)
			if rec.Agent != tc.agent || rec.ServerName != "agentctl" {
				t.Fatalf("record: agent %q server %q, want %q and agentctl", rec.Agent, rec.ServerName, tc.agent)
			}

			const progressMsg = "migrating the schema"
			plan := clientPlan(t, rec, tc.file,
				tsStep{Op: "list"},
				tsStep{Op: "call", Name: tc.progress, Arguments: map[string]any{"message": progressMsg, "status": "running", "percent": 40}},
				tsStep{Op: "call", Name: tc.ask, Arguments: map[string]any{"question": "Which database?", "choices": []string{"staging", "prod"}}},
				tsStep{Op: "call", Name: "no_such_tool", Arguments: map[string]any{}},
				tsStep{Op: "call", Name: tc.get, Arguments: map[string]any{}},
			)
			run := startTS(ctx, t, plan, otherDir(t), e.clientEnv())

			// Another process answers: poll the real binary until the question
			// is open, then answer it.
			q := e.awaitQuestion(ctx, rec.ID, run)
			if q.Text != "Which database?" || !slices.Equal(q.Choices, []string{"staging", "prod"}) || q.Status != "open" || q.Instance != rec.ID {
				t.Fatalf("open question = %+v, want \"Which database?\" with choices [staging prod], open, of %s", q, rec.ID)
			}
			e.mustRun(ctx, "instance", "answer", rec.ID, "staging")

			out := run.wait()
			if out.Server.Name != "agentctl" {
				t.Errorf("server name in initialize = %q, want agentctl", out.Server.Name)
			}
			if len(out.Results) != 5 {
				t.Fatalf("want 5 results, got %d: %+v", len(out.Results), out.Results)
			}

			// tools/list: exactly the transport names of this client.
			wantNames := []string{tc.ask, tc.get, tc.progress}
			sort.Strings(wantNames)
			if got := listNames(t, out.result(t, 0, "list")); !slices.Equal(got, wantNames) {
				t.Errorf("tools/list = %v, want exactly %v", got, wantNames)
			}

			// report_progress, recorded under the canonical name.
			var prog progressOut
			structured(t, out.result(t, 1, "call"), &prog)
			if !prog.Recorded || prog.Status != "running" || prog.Seq <= 0 {
				t.Errorf("report_progress result = %+v, want recorded=true status=running seq>0", prog)
			}
			// Then the question's: blocked while it waited, running once
			// answered.
			evs := e.events(ctx, rec.ID)
			if len(evs) != 3 || evs[1].Tool != "ask_user_question_agentctl" || evs[1].Status != "blocked" || evs[2].Status != "running" {
				t.Fatalf("instance events: want report_progress's, then blocked and running of the question, got %+v", evs)
			}
			ev := evs[0]
			if ev.Tool != "report_progress_agentctl" || ev.Status != "running" || ev.Message != progressMsg ||
				ev.Percent == nil || *ev.Percent != 40 || ev.Seq != prog.Seq || ev.Instance != rec.ID {
				t.Errorf("event = %s, want tool report_progress_agentctl, status running, message %q, percent 40, seq %d, instance %s",
					ev, progressMsg, prog.Seq, rec.ID)
			}

			// ask_user_question, answered by the other process.
			var ask askOut
			structured(t, out.result(t, 2, "call"), &ask)
			if ask.Answered == nil || !*ask.Answered || ask.Answer != "staging" || ask.Status != "answered" || ask.QuestionID != q.ID {
				t.Errorf("ask result = %+v, want answered=true answer=staging status=answered question_id=%s", ask, q.ID)
			}
			all := e.questions(ctx, rec.ID, true)
			if len(all) != 1 || all[0].ID != q.ID || all[0].Status != "answered" || all[0].Answer != "staging" {
				t.Errorf("questions --all = %+v, want the one question answered with staging", all)
			}

			// An unknown tool is the normal unknown-tool error.
			wantCallError(t, out.result(t, 3, "call"), -32602)

			// get_instance describes the names consistently with tools/list.
			var inst instanceOut
			structured(t, out.result(t, 4, "call"), &inst)
			if inst.ID != rec.ID || inst.Agent != tc.agent || inst.ServerName != "agentctl" ||
				inst.Namespacing != rec.Capabilities.ToolNames.Namespacing {
				t.Errorf("get_instance = id %q agent %q server %q namespacing %q; want %q %q agentctl %q",
					inst.ID, inst.Agent, inst.ServerName, inst.Namespacing, rec.ID, tc.agent, rec.Capabilities.ToolNames.Namespacing)
			}
			wantTransport := map[string]string{
				"ask_user_question_agentctl": tc.ask,
				"report_progress_agentctl":   tc.progress,
				"get_instance_agentctl":      tc.get,
			}
			if len(inst.Tools) != len(wantTransport) {
				t.Errorf("get_instance lists %d tools, want %d: %+v", len(inst.Tools), len(wantTransport), inst.Tools)
			}
			for _, tool := range inst.Tools {
				tr, ok := wantTransport[tool.Canonical]
				if !ok {
					t.Errorf("get_instance lists unexpected canonical name %q", tool.Canonical)
					continue
				}
				delete(wantTransport, tool.Canonical)
				if tool.Transport != tr {
					t.Errorf("get_instance: %s transport = %q, want %q (what tools/list sent)", tool.Canonical, tool.Transport, tr)
				}
				if want := tc.modelSees(tool.Canonical); tool.ModelVisible != want {
					t.Errorf("get_instance: %s model_visible = %q, want %q", tool.Canonical, tool.ModelVisible, want)
				}
			}
			for c := range wantTransport {
				t.Errorf("get_instance does not list %s", c)
			}
		})
	}
}

func TestRealClientQuestionTimeout(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	rec := e.create(ctx, "--agent", "auggie", "--question-timeout", "1s")
	if rec.QuestionTimeout != "1s" {
		t.Fatalf("record question_timeout = %q, want 1s", rec.QuestionTimeout)
	}
	out := runTS(ctx, t, clientPlan(t, rec, "mcp.json",
		tsStep{Op: "call", Name: "ask_user_question", Arguments: map[string]any{"question": "Anyone there?"}},
	), otherDir(t), e.clientEnv())

	var ask askOut
	structured(t, out.result(t, 0, "call"), &ask) // a normal result: no protocol error, not isError
	if ask.Answered == nil || *ask.Answered || ask.Status != "expired" || ask.Answer != "" || ask.QuestionID == "" {
		t.Errorf("ask result = %+v, want answered=false status=expired, no answer, a question_id", ask)
	}
	if open := e.questions(ctx, rec.ID, false); len(open) != 0 {
		t.Errorf("open questions after the timeout = %+v, want none", open)
	}
	all := e.questions(ctx, rec.ID, true)
	if len(all) != 1 || all[0].ID != ask.QuestionID || all[0].Status != "expired" || all[0].Text != "Anyone there?" {
		t.Errorf("questions --all = %+v, want the one question %s expired", all, ask.QuestionID)
	}
	// An expired question can no longer be answered.
	if res := e.run(ctx, "instance", "answer", rec.ID, ask.QuestionID, "late"); res.code != ExitInvalid {
		t.Errorf("answering an expired question: want exit %d (invalid)\n%s", ExitInvalid, res)
	}
}

// TestRealClientElicitation: the TypeScript SDK client, announcing
// elicitation, started the way a person starts a client (no headless run
// recorded). A person's answer, decline or cancel reaches the model; a
// decline or cancel faster than anyone reads sends the question to the
// store, where `instance answer` answers it; and an instance whose policy
// says store never asks the client.
func TestRealClientElicitation(t *testing.T) {
	t.Parallel()
	const person = 1500 // ms: longer than mcpserver.DefaultReadingTime
	cases := []struct {
		name        string
		flags       []string
		elicitation map[string]any
		delayMs     int
		elicited    bool
		stored      bool // the question went to the store (answered there)
		answer      string
		status      string
	}{
		{"accept", nil, map[string]any{"action": "accept", "content": map[string]any{"answer": "blue"}}, 0, true, false, "blue", "answered"},
		{"a person declines", nil, map[string]any{"action": "decline"}, person, true, false, "", "declined"},
		{"a person cancels", nil, map[string]any{"action": "cancel"}, person, true, false, "", "cancelled"},
		{"instant decline", nil, map[string]any{"action": "decline"}, 0, true, true, "red", "answered"},
		{"instant cancel", nil, map[string]any{"action": "cancel"}, 0, true, true, "red", "answered"},
		{"--ask-via store", []string{"--ask-via", "store"}, map[string]any{"action": "decline"}, 0, false, true, "red", "answered"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
			defer cancel()
			e := newRCEnv(t)
			// A short question timeout where nothing should be stored: if the
			// endpoint wrongly fell back to the store, the call would end
			// "expired", not hang.
			timeout := "2s"
			if tc.stored {
				timeout = "2m"
			}
			rec := e.create(ctx, append([]string{"--agent", "claude-code", "--question-timeout", timeout}, tc.flags...)...)
			plan := clientPlan(t, rec, ".mcp.json",
				tsStep{Op: "call", Name: "ask_user_question_agentctl", Arguments: map[string]any{"question": "Favourite colour?", "choices": []string{"red", "blue"}}},
			)
			plan.Elicitation = tc.elicitation
			plan.ElicitationDelayMs = tc.delayMs
			run := startTS(ctx, t, plan, otherDir(t), e.clientEnv())
			if tc.stored {
				q := e.awaitQuestion(ctx, rec.ID, run)
				if q.Text != "Favourite colour?" {
					t.Fatalf("stored question %+v", q)
				}
				e.mustRun(ctx, "instance", "answer", rec.ID, tc.answer)
			}
			out := run.wait()

			var ask askOut
			structured(t, out.result(t, 0, "call"), &ask)
			if ask.Answered == nil || *ask.Answered != (tc.status == "answered") || ask.Answer != tc.answer || ask.Status != tc.status {
				t.Errorf("ask result = %+v, want answer=%q status=%q", ask, tc.answer, tc.status)
			}
			if (ask.QuestionID != "") != tc.stored {
				t.Errorf("ask result has question_id %q; want one only when the question was stored", ask.QuestionID)
			}
			if got := strings.Contains(run.stderr.String(), `"op":"elicitation"`); got != tc.elicited {
				t.Errorf("asked through elicitation: %v, want %v; the client's stderr:\n%s", got, tc.elicited, run.stderr.String())
			}
			if all := e.questions(ctx, rec.ID, true); (len(all) == 1) != tc.stored || len(all) > 1 {
				t.Errorf("questions --all = %+v, want a stored question: %v", all, tc.stored)
			}
		})
	}
}

func TestRealClientDefinitionEditDoesNotChangeInstance(t *testing.T) {
	t.Parallel()
	const suffixDef = `id      = "myagent"
name    = "My agent"
command = ["myagent"]

[mcp]
config_format = "mcp-servers-json"

[capabilities.tool_names]
namespacing = "suffix"
template    = "{tool}_{server}"
max_length  = 64
charset     = "^[A-Za-z0-9_-]+$"
`
	prefixDef := strings.NewReplacer(`namespacing = "suffix"`, `namespacing = "prefix"`,
		`template    = "{tool}_{server}"`, `template    = "mcp__{server}__{tool}"`).Replace(suffixDef)
	if prefixDef == suffixDef {
		t.Fatal("test bug: the prefix definition equals the suffix one")
	}
	full := []string{"ask_user_question_agentctl", "get_instance_agentctl", "report_progress_agentctl"}
	short := []string{"ask_user_question", "get_instance", "report_progress"}

	cases := []struct {
		name              string
		atCreate, edited  string
		createdNS, editNS string
		wantList          []string
	}{
		{"suffix-then-prefix", suffixDef, prefixDef, "suffix", "prefix", short},
		{"prefix-then-suffix", prefixDef, suffixDef, "prefix", "suffix", full},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
			defer cancel()
			e := newRCEnv(t)
			defFile := filepath.Join(e.config, "agentctl", "agents", "myagent.toml")
			if err := os.MkdirAll(filepath.Dir(defFile), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(defFile, []byte(tc.atCreate), 0o644); err != nil {
				t.Fatal(err)
			}
			rec := e.create(ctx, "--agent", "myagent")
			if rec.Capabilities.ToolNames.Namespacing != tc.createdNS {
				t.Fatalf("created with namespacing %q, want %q (the user definition was not used)", rec.Capabilities.ToolNames.Namespacing, tc.createdNS)
			}

			// Edit the definition; prove the edit is in force for new instances.
			if err := os.WriteFile(defFile, []byte(tc.edited), 0o644); err != nil {
				t.Fatal(err)
			}
			probe := e.create(ctx, "--agent", "myagent")
			if probe.Capabilities.ToolNames.Namespacing != tc.editNS {
				t.Fatalf("after the edit a new instance has namespacing %q, want %q", probe.Capabilities.ToolNames.Namespacing, tc.editNS)
			}

			// The existing instance keeps its snapshot: record and endpoint.
			var shown rcRecord
			if err := json.Unmarshal([]byte(e.mustRun(ctx, "instance", "show", rec.ID, "-o", "json")), &shown); err != nil {
				t.Fatal(err)
			}
			if shown.Capabilities.ToolNames.Namespacing != tc.createdNS {
				t.Errorf("instance show: namespacing %q after the edit, want the snapshot %q", shown.Capabilities.ToolNames.Namespacing, tc.createdNS)
			}
			out := runTS(ctx, t, clientPlan(t, rec, "mcp.json",
				tsStep{Op: "list"},
				tsStep{Op: "call", Name: "report_progress", Arguments: map[string]any{"message": "short name"}},
			), otherDir(t), e.clientEnv())
			if got := listNames(t, out.result(t, 0, "list")); !slices.Equal(got, tc.wantList) {
				t.Errorf("tools/list = %v, want %v (the %s snapshot, not the edited %s definition)", got, tc.wantList, tc.createdNS, tc.editNS)
			}
			// Routing follows the snapshot too: the short name resolves only
			// for a suffix instance.
			call := out.result(t, 1, "call")
			if tc.createdNS == "suffix" {
				var prog progressOut
				structured(t, call, &prog)
				if !prog.Recorded {
					t.Errorf("report_progress by its short name on a suffix instance: %+v", prog)
				}
			} else {
				wantCallError(t, call, -32602)
			}
		})
	}
}
