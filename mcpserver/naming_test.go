package mcpserver

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/agents"
)

// nameSet is a NameSet for the pure naming functions.
type nameSet map[string]bool // name -> built-in

func (n nameSet) Has(name string) bool       { _, ok := n[name]; return ok }
func (n nameSet) IsBuiltin(name string) bool { return n[name] }
func (n nameSet) Entries() []Entry {
	var out []Entry
	for name, builtin := range n {
		e := Entry{Name: name, Kind: KindKB, Base: name}
		if builtin {
			e.Kind, e.Base = KindBuiltin, strings.TrimSuffix(name, "_agentctl")
		} else if p, b, ok := strings.Cut(name, "__"); ok {
			e.Prefix, e.Base = p, b
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out
}

var (
	suffix = agents.NamespacingSuffix
	prefix = agents.NamespacingPrefix
	none   = agents.NamespacingNone
)

func TestPresentToolName(t *testing.T) {
	builtins := nameSet{"ask_user_question_agentctl": true, "report_progress_agentctl": true}
	withShort := nameSet{"ask_user_question_agentctl": true, "ask_user_question": false}
	external := nameSet{"fetch_agentctl": false}
	tests := []struct {
		name      string
		set       nameSet
		style     agents.Namespacing
		canonical string
		want      string
	}{
		{"suffix strips one _S from a built-in", builtins, suffix, "ask_user_question_agentctl", "ask_user_question"},
		{"suffix keeps the name when the stripped form is registered", withShort, suffix, "ask_user_question_agentctl", "ask_user_question_agentctl"},
		{"suffix leaves the registered short name alone", withShort, suffix, "ask_user_question", "ask_user_question"},
		{"suffix strips only one _S", nameSet{"x_agentctl_agentctl": true}, suffix, "x_agentctl_agentctl", "x_agentctl"},
		{"suffix leaves non-built-ins alone", external, suffix, "fetch_agentctl", "fetch_agentctl"},
		{"suffix never yields an empty name", nameSet{"_agentctl": true}, suffix, "_agentctl", "_agentctl"},
		{"prefix is unchanged", builtins, prefix, "ask_user_question_agentctl", "ask_user_question_agentctl"},
		{"none is unchanged", builtins, none, "report_progress_agentctl", "report_progress_agentctl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PresentToolName(tt.set, tt.style, "agentctl", tt.canonical); got != tt.want {
				t.Fatalf("PresentToolName(%q) = %q, want %q", tt.canonical, got, tt.want)
			}
		})
	}
}

func TestRouteToolCall(t *testing.T) {
	builtins := nameSet{"ask_user_question_agentctl": true, "report_progress_agentctl": true}
	both := nameSet{"ask_user_question_agentctl": true, "ask_user_question": false}
	tests := []struct {
		name  string
		set   nameSet
		style agents.Namespacing
		call  string
		want  string // "" means unknown
	}{
		{"suffix reverses the stripped name", builtins, suffix, "ask_user_question", "ask_user_question_agentctl"},
		{"suffix accepts the canonical name too", builtins, suffix, "report_progress_agentctl", "report_progress_agentctl"},
		{"exact registered name wins over the reversal", both, suffix, "ask_user_question", "ask_user_question"},
		{"prefix does not reverse", builtins, prefix, "ask_user_question", ""},
		{"none does not reverse", builtins, none, "ask_user_question", ""},
		{"prefix routes the exact name", builtins, prefix, "ask_user_question_agentctl", "ask_user_question_agentctl"},
		{"unknown name", builtins, suffix, "no_such_tool", ""},
		{"empty name", builtins, suffix, "", ""},
		{"the client's own rendering is not a tool", builtins, prefix, "mcp__agentctl__ask_user_question_agentctl", ""},
		{"reversal only to built-ins", nameSet{"fetch_agentctl": false}, suffix, "fetch", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := RouteToolCall(tt.set, tt.style, "agentctl", tt.call)
			if r.Canonical != tt.want {
				t.Fatalf("RouteToolCall(%q) = %q (err %v), want %q", tt.call, r.Canonical, r.Err, tt.want)
			}
			if (tt.want == "") != (r.Err != nil) {
				t.Fatalf("error %v with canonical %q", r.Err, r.Canonical)
			}
		})
	}
}

func TestRouteToolCallExplainsUnknownNames(t *testing.T) {
	set := nameSet{
		"ask_user_question_agentctl": true,
		"docs__concept_read":         false, "docs__concept_list": false,
		"browser__fetch": false, "browser__click": false,
		"notes__concept_read": false,
		"solo":                false,
	}
	tests := []struct {
		call       string
		reason     UnknownReason
		message    string
		suggestion string
	}{
		{"__fetch", EmptyServerPart, `unknown tool "__fetch": the server part before "__" is empty`, ""},
		{"browser__", EmptyToolPart, `unknown tool "browser__": the tool part after "browser__" is empty`, ""},
		{"nosuch__fetch", UnknownServer, `unknown tool "nosuch__fetch": server "nosuch" not found; mounted: browser, docs, notes`, ""},
		{"browser__nosuch", UnknownToolOnServer, `unknown tool "browser__nosuch": server "browser" has no tool "nosuch"; it has browser__click, browser__fetch`, ""},
		{"fetch", BareName, `unknown tool "fetch"; did you mean "browser__fetch"?`, "browser__fetch"},
		{"concept_list", BareName, `did you mean "docs__concept_list"?`, "docs__concept_list"},
		// Two candidates: both suggested, neither guessed.
		{"concept_read", BareName, `unknown tool "concept_read"; did you mean "docs__concept_read" or "notes__concept_read"?`, ""},
		{"ask_user_question", BareName, `did you mean "ask_user_question_agentctl"?`, "ask_user_question_agentctl"},
		{"nothing_like_it", UnknownName, `unknown tool "nothing_like_it"`, ""},
		{"agentctl__ask_user_question", UnknownServer, `server "agentctl" not found; "agentctl" is agentctl's own server name; its tools are called by their names (ask_user_question_agentctl)`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.call, func(t *testing.T) {
			r := RouteToolCall(set, prefix, "agentctl", tt.call)
			if r.Err == nil {
				t.Fatalf("resolved to %q", r.Canonical)
			}
			if r.Err.Reason != tt.reason || r.Err.Suggestion != tt.suggestion || !strings.Contains(r.Err.Error(), tt.message) {
				t.Fatalf("got reason %d suggestion %q message %q", r.Err.Reason, r.Err.Suggestion, r.Err)
			}
		})
	}
	// A bare name never resolves to a prefixed tool, whatever the style.
	for _, style := range agents.Namespacings {
		if r := RouteToolCall(set, style, "agentctl", "fetch"); r.Canonical != "" {
			t.Fatalf("%s: bare fetch resolved to %q", style, r.Canonical)
		}
	}
}

func TestRouteToolCallSuggestsTheCanonicalName(t *testing.T) {
	set := nameSet{"ask_user_question_agentctl": true, "report_progress_agentctl": true}
	r := RouteToolCall(set, prefix, "agentctl", "ask_user_question")
	if r.Err == nil || r.Err.Suggestion != "ask_user_question_agentctl" {
		t.Fatalf("got %+v", r)
	}
	if !strings.Contains(r.Err.Error(), `did you mean "ask_user_question_agentctl"`) {
		t.Fatalf("message: %s", r.Err)
	}
}

// FuzzPresentRoute checks the contract for any registry: routing the
// presented name gives back the canonical name, and no two tools are
// presented under one name.
func FuzzPresentRoute(f *testing.F) {
	f.Add("agentctl", "ask_user_question_agentctl,report_progress_agentctl", "ask_user_question,fetch_agentctl", uint8(2))
	f.Add("s", "a_s,a_s_s,_s", "a,a_s_s_s", uint8(2))
	f.Add("x", "y_x", "y_x_x", uint8(0))
	f.Add("ab", "c_ab_ab,c_ab", "c", uint8(1))
	f.Fuzz(func(t *testing.T, server, builtinCSV, otherCSV string, styleN uint8) {
		if server == "" {
			return
		}
		style := agents.Namespacings[int(styleN)%len(agents.Namespacings)]
		set := nameSet{}
		for _, n := range strings.Split(otherCSV, ",") {
			if n != "" {
				set[n] = false
			}
		}
		for _, n := range strings.Split(builtinCSV, ",") {
			if n != "" {
				set[n] = true // a built-in claims the name if both list it
			}
		}
		seen := map[string]string{}
		for x := range set {
			p := PresentToolName(set, style, server, x)
			if p == "" {
				t.Fatalf("%q presented as empty", x)
			}
			if prev, dup := seen[p]; dup {
				t.Fatalf("%q and %q both presented as %q", prev, x, p)
			}
			seen[p] = x
			r := RouteToolCall(set, style, server, p)
			if r.Canonical != x {
				t.Fatalf("route(present(%q)) = route(%q) = %q (err %v)", x, p, r.Canonical, r.Err)
			}
		}
	})
}

func ExamplePresentToolName() {
	names, _ := BuiltinRegistry("agentctl")
	fmt.Println(PresentToolName(names, agents.NamespacingSuffix, "agentctl", "ask_user_question_agentctl"))
	fmt.Println(PresentToolName(names, agents.NamespacingPrefix, "agentctl", "ask_user_question_agentctl"))
	// Output:
	// ask_user_question
	// ask_user_question_agentctl
}

func ExampleRouteToolCall() {
	names, _ := BuiltinRegistry("agentctl")
	fmt.Println(RouteToolCall(names, agents.NamespacingSuffix, "agentctl", "ask_user_question").Canonical)
	fmt.Println(RouteToolCall(names, agents.NamespacingPrefix, "agentctl", "ask_user_question").Err)
	// Output:
	// ask_user_question_agentctl
	// unknown tool "ask_user_question"; did you mean "ask_user_question_agentctl"?
}

// The router names an in-process service when the server part is its name
// rather than its prefix (the same IsInProcess answer the reserved-name
// checks use).
func TestRouteToolCallHintsInProcessNames(t *testing.T) {
	reg := NewRegistry(nil)
	for _, e := range []Entry{
		{Name: "ask_user_question_agentctl", Kind: KindBuiltin, Base: "ask_user_question"},
		{Name: "d__concept_read", Kind: KindKB, Mount: "docs", Prefix: "d", Base: "concept_read"},
		{Name: "web__fetch", Kind: KindServer, Mount: "browser", Prefix: "web", Base: "fetch"},
	} {
		if err := reg.reserve(&e); err != nil {
			t.Fatal(err)
		}
	}
	r := RouteToolCall(reg, prefix, "agentctl", "docs__concept_read")
	if r.Err == nil || !strings.Contains(r.Err.Error(), `server "docs" not found; "docs" is a knowledge base; its tools are prefixed d__`) {
		t.Fatalf("got %v", r.Err)
	}
	// An external server's name gets the plain list of mounts.
	r = RouteToolCall(reg, prefix, "agentctl", "browser__fetch")
	if r.Err == nil || !strings.Contains(r.Err.Error(), `server "browser" not found; mounted: d, web`) {
		t.Fatalf("got %v", r.Err)
	}
}

// TestBuiltinRegistryIsWhatTheEndpointRegisters: the built-ins that names
// are presented against without an endpoint are exactly the endpoint's.
func TestBuiltinRegistryIsWhatTheEndpointRegisters(t *testing.T) {
	for _, server := range []string{"agentctl", "ops"} {
		ep, err := New(Config{ServerName: server, Naming: namings[agents.NamespacingSuffix], Store: newFakeStore()})
		if err != nil {
			t.Fatal(err)
		}
		reg, err := BuiltinRegistry(server)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := reg.Entries(), ep.Registry().Entries(); !slices.Equal(got, want) {
			t.Errorf("%s: BuiltinRegistry has %+v, the endpoint %+v", server, got, want)
		}
	}
	if _, err := BuiltinRegistry("bad name"); err == nil || !strings.Contains(err.Error(), `tool name "ask_user_question_bad name" contains ' '`) {
		t.Fatalf("got %v", err)
	}
}

// A "<mount>__<tool>" name for a mount whose tools have no prefix (the only
// mount) says so and suggests the tool's own name, rather than claiming
// that nothing is mounted.
func TestUnknownToolOfAnUnprefixedMount(t *testing.T) {
	reg := NewRegistry(nil)
	if err := reg.reserve(&Entry{Name: "slow", Source: "mcp up", Kind: KindServer, Mount: "up", Base: "slow"}); err != nil {
		t.Fatal(err)
	}
	err := explainUnknown(reg, "agentctl", "up__slow")
	want := `unknown tool "up__slow": server "up" not found; mount "up" has no tool prefix (it is the only mount, or its prefix is off), so its tools are called by their own names; did you mean "slow"?`
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
}
