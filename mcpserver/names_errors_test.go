package mcpserver

import (
	"errors"
	"slices"
	"testing"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/mcpserver/mount"
)

// A bare name that is the unprefixed form of several tools lists them all.
func TestRouteToolCallSuggestsEveryCandidate(t *testing.T) {
	set := nameSet{"team_docs__concept_read": false, "runbooks__concept_read": false, "wiki__concept_read": false, "wiki__concept_list": false}
	r := RouteToolCall(set, prefix, "agentctl", "concept_read")
	want := `unknown tool "concept_read"; did you mean "runbooks__concept_read", "team_docs__concept_read" or "wiki__concept_read"?`
	if r.Err == nil || r.Err.Error() != want {
		t.Fatalf("got  %v\nwant %s", r.Err, want)
	}
	if r.Err.Suggestion != "" || !slices.Equal(r.Err.Suggestions, []string{"runbooks__concept_read", "team_docs__concept_read", "wiki__concept_read"}) {
		t.Fatalf("suggestion %q, suggestions %q", r.Err.Suggestion, r.Err.Suggestions)
	}
	r = RouteToolCall(set, prefix, "agentctl", "concept_list")
	if r.Err == nil || r.Err.Suggestion != "wiki__concept_list" || r.Err.Error() != `unknown tool "concept_list"; did you mean "wiki__concept_list"?` {
		t.Fatalf("one candidate: %v", r.Err)
	}
}

// With tool_prefix_mode off, two knowledge bases collide; the error names
// the explicit tool_prefix each could take.
func TestModeOffCollisionNamesEachMountsEscape(t *testing.T) {
	ms := kbMounts(t, mount.PrefixModeOff, mount.Mount{Name: "team docs"}, mount.Mount{Name: "runbooks"})
	_, err := NameTools("agentctl", namings[agents.NamespacingPrefix], ms)
	var ce *CollisionError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v", err)
	}
	want := `tool name "concept_list" is provided by both kb team docs and kb runbooks; with no prefix their tools share one namespace: ` +
		`give each mount an explicit tool_prefix (kb team docs: --kb 'team docs=DIR,prefix=team_docs', or tool_prefix = "team_docs" in its [[kbs]] table; ` +
		`kb runbooks: --kb runbooks=DIR,prefix=runbooks, or tool_prefix = "runbooks" in its [[kbs]] table), or use tool_prefix_mode "mount-name" to derive them`
	if err.Error() != want {
		t.Fatalf("got  %s\nwant %s", err, want)
	}
	// A knowledge base against an external server names each one's way.
	a := &Entry{Name: "fetch", Source: "kb 3d", Kind: KindKB, Mount: "3d"}
	b := &Entry{Name: "fetch", Source: "mcp web", Kind: KindServer, Mount: "web"}
	if got := newCollision("fetch", a, b).Escape; got != `with no prefix their tools share one namespace: give each mount an explicit tool_prefix (kb 3d: --kb 3d=DIR,prefix=P, or tool_prefix = "P" in its [[kbs]] table; mcp web: "tool_prefix":"web" in its --mcp-json, or tool_prefix = "web" in its [[mcp_servers]] table), or use tool_prefix_mode "mount-name" to derive them` {
		t.Fatalf("got %s", got)
	}
	// A built-in against a mount keeps the short advice.
	if got := newCollision("x", &Entry{Source: "built-in", Kind: KindBuiltin}, b).Error(); got != `tool name "x" is provided by both built-in and mcp web; rename one of them` {
		t.Fatalf("got %s", got)
	}
}
