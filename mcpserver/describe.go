package mcpserver

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/mcpserver/mount"
)

// ServerListing is what an external server offered when it was asked for
// its tools, or why it could not be asked: the input [DescribeTools] needs
// from the outside world, so that it stays pure.
type ServerListing struct {
	// Mount is the server's mount name.
	Mount string `json:"name"`
	// State is "up" when Tools is what the server listed, "down" when it
	// failed (Error says why), "unlisted" when nobody asked (no --connect).
	State string `json:"state"`
	// Error says why the server could not be listed.
	Error string `json:"error,omitempty"`
	// Tools are the server's own tool names, as it listed them.
	Tools []string `json:"tools"`
	// StderrTail is, for a server down, the last lines it wrote to its
	// stderr ([github.com/agentctl/agentctl/mcpserver/proxy.ServerStatus]'s
	// StderrTail: bounded, secrets taken out).
	StderrTail []string `json:"stderr_tail,omitempty"`
	// Unservable says, by own name, why a tool of Tools cannot be served
	// as the server described it (its schema: [SchemaChecker]).
	Unservable map[string]string `json:"-"`
}

// Listing states of a [ServerListing].
const (
	ListingUp       = "up"
	ListingDown     = "down"
	ListingUnlisted = "unlisted"
)

// Tool statuses of a [ToolRow].
const (
	// StatusServed: the endpoint serves the tool under these names.
	StatusServed = "served"
	// StatusWithheld: the endpoint does not serve the tool (a collision or
	// an invalid name); its findings say why.
	StatusWithheld = "withheld"
)

// ToolRow is one tool as `agentctl tools list` shows it: every name it has
// ([NamedTool]), the model-visible length against the client's limit, and
// what is wrong with it. The JSON field names are a CLI contract: add
// fields, never rename them.
type ToolRow struct {
	NamedTool
	// Kind is builtin, kb or mcp.
	Kind Kind `json:"kind"`
	// Length is the model-visible name's length in characters (its
	// longest part's, for a client that sends the parts separately); MaxLength
	// is the client's limit.
	Length    int `json:"length"`
	MaxLength int `json:"max_length"`
	// Status is [StatusServed] or [StatusWithheld].
	Status string `json:"status"`
	// Findings are the problems with this tool's names, each with its fix.
	Findings []Finding `json:"findings"`
}

// Description is everything an instance's client will show its model, for
// one client: what `tools list` prints and what `tools lint` checks.
type Description struct {
	ServerName string            `json:"server_name"`
	Naming     agents.ToolNaming `json:"naming"`
	Tools      []ToolRow         `json:"tools"`
	// Servers are the external servers and whether their tools are known.
	Servers []ServerListing `json:"servers"`
	// Findings are the problems that belong to no single tool (a server
	// that could not be listed; a text the model reads that names a tool
	// under a name the model does not see, from [LintTexts]).
	Findings []Finding `json:"findings"`
}

// DescribeTools computes the description of an instance for one client:
// the built-ins and knowledge bases from the configuration, the external
// servers' tools from their listings, each tool with its canonical,
// transport and model-visible names, and the findings of [LintTools]. It is
// pure; the caller lists the servers (or not) and passes what it got.
//
// The run-time rule for an external tool that takes an in-process tool's
// canonical, transport or model-visible name: the in-process tool keeps its
// name and the external one is withheld. Two external tools with one
// canonical name are both withheld. A configuration the contract refuses
// (two knowledge bases with one name) is an error, as for [NameTools].
func DescribeTools(server string, naming agents.ToolNaming, mounts []mount.Resolved, listings []ServerListing) (Description, error) {
	static, err := staticRegistry(server, mounts)
	if err != nil {
		return Description{}, err
	}
	origins := map[string]mount.PrefixOrigin{}
	byName := map[string]mount.Resolved{}
	for _, m := range mounts {
		origins[m.Name] = m.PrefixOrigin
		byName[m.Name] = m
	}
	rows := nameEntries(static.Entries(), static, server, naming, origins)
	// An in-process tool's canonical, transport and model-visible names.
	canonical, transport := map[string]*ToolRow{}, map[string]*ToolRow{}
	for i := range rows {
		canonical[rows[i].Canonical] = &rows[i]
		transport[rows[i].Transport] = &rows[i]
	}
	d := Description{ServerName: server, Naming: naming}
	// External tools, in mount order; a name two servers want is nobody's.
	var ext []Entry
	count := map[string]int{}
	unservable := map[[2]string]string{}
	for _, m := range mounts {
		if m.Kind != mount.KindServer {
			continue
		}
		l := ServerListing{Mount: m.Name, State: ListingUnlisted, Tools: []string{}}
		if i := slices.IndexFunc(listings, func(l ServerListing) bool { return l.Mount == m.Name }); i >= 0 {
			l = listings[i]
		}
		d.Servers = append(d.Servers, l)
		if l.State == ListingDown {
			d.Findings = append(d.Findings, serverDown(m, l.Error))
		}
		for _, base := range l.Tools {
			e := Entry{Name: m.ToolName(base), Source: m.Source(), Kind: KindServer, Mount: m.Name, Prefix: m.EffectivePrefix, Base: base}
			ext = append(ext, e)
			count[e.Name]++
			if why, ok := l.Unservable[base]; ok {
				unservable[[2]string{m.Name, base}] = why
			}
		}
	}
	extRows := nameEntries(ext, static, server, naming, origins)
	// The run-time rule is the endpoint's own: WithheldExternal decides
	// which external tools an in-process tool keeps out.
	inProcess := make([]NamedTool, len(rows))
	for i := range rows {
		inProcess[i] = rows[i].NamedTool
	}
	offered := make([]ExternalTool, len(extRows))
	for i, r := range extRows {
		offered[i] = ExternalTool{Name: r.Canonical, Mount: r.Mount, Source: r.Source}
	}
	held := map[[2]string]Withheld{}
	heldNames := map[string]bool{}
	for _, w := range WithheldExternal(server, naming, inProcess, offered) {
		held[[2]string{w.Name, w.Source}] = w
		heldNames[w.Name] = true
	}
	var names []string
	for _, r := range extRows {
		if !heldNames[r.Canonical] {
			names = append(names, r.Canonical)
		}
	}
	alike := AlikeExternal(server, naming, names)
	for i := range extRows {
		r := &extRows[i]
		m := byName[r.Mount]
		w, isHeld := held[[2]string{r.Canonical, r.Source}]
		why, badSchema := unservable[[2]string{r.Mount, r.Base}]
		switch {
		case ValidateToolName(r.Canonical) != nil:
			r.withhold(invalidName(m, r.Base, ValidateToolName(r.Canonical)))
		case badSchema:
			r.withhold(invalidSchema(m, r.Base, why))
		case isHeld && w.Holder == r.Canonical:
			r.withhold(takesInProcess(m, r, canonical[w.Holder], "canonical name"))
		case isHeld && transport[r.Transport] == canonical[w.Holder]:
			r.withhold(takesInProcess(m, r, canonical[w.Holder], "name on the wire"))
		case isHeld:
			r.withhold(takesInProcess(m, r, canonical[w.Holder], "model-visible name"))
		case alike[r.Canonical] != nil:
			for _, f := range alikeExternal(server, naming, r, alike[r.Canonical], extRows) {
				r.withhold(f)
			}
		case count[r.Canonical] > 1:
			r.withhold(sharedExternal(m, r, extRows))
		}
	}
	d.Tools = append(rows, extRows...)
	slices.SortStableFunc(d.Tools, func(a, b ToolRow) int { return strings.Compare(a.Canonical, b.Canonical) })
	LintTools(server, naming, d.Tools)
	for i := range d.Tools {
		d.Tools[i].Problems = problemTexts(d.Tools[i].Findings)
		if d.Tools[i].Findings == nil {
			d.Tools[i].Findings = []Finding{}
		}
	}
	if d.Servers == nil {
		d.Servers = []ServerListing{}
	}
	if d.Findings == nil {
		d.Findings = []Finding{}
	}
	return d, nil
}

// staticRegistry reserves the in-process tools (built-ins and knowledge
// bases) of a configuration, refusing a name taken twice.
func staticRegistry(server string, mounts []mount.Resolved) (*Registry, error) {
	reg := NewRegistry(nil)
	for _, b := range BuiltinBases {
		if err := reg.reserve(&Entry{Name: BuiltinName(b, server), Source: sourceBuiltin, Kind: KindBuiltin, Base: b}); err != nil {
			return nil, err
		}
	}
	for _, m := range mounts {
		if m.Kind != mount.KindKB {
			continue
		}
		for _, b := range KBToolBases(m.ReadOnly) {
			e := &Entry{Name: m.ToolName(b), Source: m.Source(), Kind: KindKB, Mount: m.Name, Prefix: m.EffectivePrefix, Base: b}
			if err := reg.reserve(e); err != nil {
				return nil, err
			}
		}
	}
	return reg, nil
}

// nameEntries gives each entry its transport name (presented against
// names) and model-visible name for this client: the one place where a
// tool's names are computed, for [NameTools], get_instance and
// [DescribeTools].
func nameEntries(entries []Entry, names NameSet, server string, naming agents.ToolNaming, origins map[string]mount.PrefixOrigin) []ToolRow {
	maxLen := naming.MaxLength
	if maxLen == 0 {
		maxLen = agents.DefaultMaxLength
	}
	out := make([]ToolRow, len(entries))
	front, ok := clientPrefix(server, naming)
	for i, e := range entries {
		tn := PresentToolName(names, naming.Namespacing, server, e.Name)
		r := agents.RenderModelName(naming, server, tn)
		out[i] = ToolRow{
			NamedTool: NamedTool{Canonical: e.Name, Transport: tn, ModelVisible: r.Name, Source: e.Source,
				Mount: e.Mount, Base: e.Base, PrefixOrigin: origins[e.Mount], Prompt: promptName(naming, front, ok, r.Name)},
			Kind: e.Kind, Length: modelNameLength(naming, r.Name), MaxLength: maxLen, Status: StatusServed,
		}
	}
	return out
}

// modelNameLength is the length of a model-visible name that the client's
// max_length applies to: the whole name, or its longest part where the
// client sends the parts separately ([agents.ToolNaming.PartSeparator]).
func modelNameLength(naming agents.ToolNaming, name string) int {
	if naming.PartSeparator == "" {
		return utf8.RuneCountInString(name)
	}
	longest := 0
	for _, p := range strings.Split(name, naming.PartSeparator) {
		longest = max(longest, utf8.RuneCountInString(p))
	}
	return longest
}

func (r *ToolRow) withhold(f Finding) {
	r.Status = StatusWithheld
	r.Findings = append(r.Findings, f)
}

func problemTexts(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Text())
	}
	return out
}
