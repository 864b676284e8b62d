package mcpserver

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/agentctl/agentctl/mcpserver/mount"
)

func TestWithheldExternal(t *testing.T) {
	ms := kbMounts(t, mount.PrefixModeOff, mount.Mount{Name: "docs"})
	offered := []ExternalTool{
		{Name: "ask_user_question_agentctl", Mount: "up", Source: "mcp up"},
		{Name: "ask_user_question", Mount: "up", Source: "mcp up"},
		{Name: "concept_read", Mount: "up", Source: "mcp up"},
		{Name: "fetch", Mount: "up", Source: "mcp up"},
	}
	for style, want := range map[agents.Namespacing][]string{
		// Auggie shows the unprefixed ask_user_question as
		// ask_user_question_agentctl, the built-in's name.
		agents.NamespacingSuffix: {"ask_user_question", "ask_user_question_agentctl", "concept_read"},
		agents.NamespacingPrefix: {"ask_user_question_agentctl", "concept_read"},
		agents.NamespacingNone:   {"ask_user_question_agentctl", "concept_read"},
	} {
		inProcess, err := NameTools("agentctl", namings[style], ms)
		if err != nil {
			t.Fatal(err)
		}
		ws := WithheldExternal("agentctl", namings[style], inProcess, offered)
		var got []string
		for _, w := range ws {
			got = append(got, w.Name)
			if w.Source != "mcp up" || !strings.Contains(w.Fix, `give mount "up" a tool_prefix`) {
				t.Errorf("%s: %+v", style, w)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: withheld %q, want %q", style, got, want)
		}
	}
	inProcess, _ := NameTools("agentctl", namings[agents.NamespacingSuffix], ms)
	ws := WithheldExternal("agentctl", namings[agents.NamespacingSuffix], inProcess, offered[1:2])
	want := Withheld{
		Name: "ask_user_question", Source: "mcp up", Holder: "ask_user_question_agentctl", HolderSource: "built-in",
		ModelVisible: "ask_user_question_agentctl",
		Reason:       `the client would show it as "ask_user_question_agentctl", the name of built-in tool ask_user_question_agentctl`,
		Fix:          `give mount "up" a tool_prefix: "tool_prefix" in its --mcp-json or its [[mcp_servers]] table`,
	}
	if len(ws) != 1 || ws[0] != want {
		t.Fatalf("got %+v\nwant %+v", ws, want)
	}
}

// TestInProcessNamesReservedAtRunTime mounts the test upstream without a
// prefix, offering tools named like a built-in, like a knowledge base's tool
// and (on this suffix client) like what the client shows for a built-in:
// the in-process tools keep answering, the external ones are withheld,
// reported once on stderr and by get_instance, and never reach the fast lane.
func TestInProcessNamesReservedAtRunTime(t *testing.T) {
	forEachPath(t, func(t *testing.T, path servePath) {
		kb := mount.Mount{Kind: mount.KindKB, Name: "docs", Path: t.TempDir()}
		up := withBin(t, mcpMount("up", "-tools", "1", "-tool-names", "ask_user_question_agentctl,ask_user_question,concept_read"))
		p := startProxyOn(t, path, mount.PrefixModeOff, kb, up)
		testkit.Eventually(t, "the server's tools", func() bool { return p.ep.Registry().Has("tool_0") && len(p.ep.Withheld()) == 3 })

		if e, _ := p.ep.Registry().Lookup("ask_user_question_agentctl"); e.Kind != KindBuiltin {
			t.Fatalf("ask_user_question_agentctl is %+v", e)
		}
		if p.ep.Registry().Has("ask_user_question") {
			t.Fatal("the external ask_user_question is served; on Auggie it reaches the model as the built-in's name")
		}
		names := listNames(t, p.cs)
		if n := len(slices.DeleteFunc(slices.Clone(names), func(s string) bool { return !strings.HasPrefix(s, "ask_user_question") })); n != 1 {
			t.Fatalf("tools/list has %d ask_user_question tools: %v", n, names)
		}
		// The built-in answers under its wire name and its canonical name.
		for _, name := range []string{"ask_user_question", "ask_user_question_agentctl"} {
			r, err := p.call(t, name, map[string]any{"question": " "})
			if err != nil || !r.IsError || !strings.Contains(resultText(r), "question is empty") {
				t.Fatalf("%s must reach the built-in: %v %+v", name, err, r)
			}
		}
		if r, err := p.call(t, "concept_read", map[string]any{"id": "nosuch"}); err != nil || !strings.Contains(resultText(r), "not found in knowledge base") {
			t.Fatalf("concept_read must reach the knowledge base: %v %+v", err, r)
		}
		if r, err := p.call(t, "tool_0", map[string]any{"text": "x"}); err != nil || resultText(r) != "tool_0: x" {
			t.Fatalf("tool_0: %v %+v", err, r)
		}

		r, err := p.call(t, "get_instance", nil)
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Withheld  []Withheld `json:"withheld"`
			Conflicts []Conflict `json:"conflicts"`
		}
		if err := json.Unmarshal([]byte(resultText(r)), &out); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, w := range out.Withheld {
			got = append(got, w.Name+"<"+w.Holder)
		}
		if want := []string{"ask_user_question<ask_user_question_agentctl", "ask_user_question_agentctl<ask_user_question_agentctl", "concept_read<concept_read"}; !slices.Equal(got, want) {
			t.Fatalf("get_instance withheld %q, want %q", got, want)
		}
		if len(out.Conflicts) != 0 {
			t.Fatalf("conflicts %+v", out.Conflicts)
		}

		// A relist (change_tools) reports nothing again.
		if _, err := p.call(t, "change_tools", nil); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, "the relist", func() bool { return p.ep.Registry().Has("tool_new") })
		log := p.stderr.String()
		if n := strings.Count(log, "an external tool is withheld"); n != 3 {
			t.Fatalf("reported %d times, want once per tool:\n%s", n, log)
		}
		for _, want := range []string{
			`tool=ask_user_question source="mcp up" holder=ask_user_question_agentctl`,
			`tool=concept_read source="mcp up" holder=concept_read reason="the name belongs to kb docs tool concept_read"`,
			`fix="give mount \"up\" a tool_prefix`,
		} {
			if !strings.Contains(log, want) {
				t.Errorf("stderr lacks %s:\n%s", want, log)
			}
		}
		// Only tool_0 and change_tools were external calls.
		p.checkPath(t, path, 2)
		if n := p.laneCalls(); n > 2 {
			t.Fatalf("the fast lane forwarded %d calls; a withheld tool went upstream", n)
		}
	})
}
