package webui

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/cmd/internal/provision"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/agentctl/agentctl/mcpserver/proxy"
)

// shownEvents is how many of an instance's latest events its page shows
// (the live stream adds the new ones).
const shownEvents = 200

// shownClosed is how many answered (or expired) questions the page lists.
const shownClosed = 10

// instanceView is an instance's page.
type instanceView struct {
	ID, Label, Agent, Status, Host, Workspace, Transport, ServerName string
	Created                                                          time.Time
	QuestionTimeout                                                  string

	Open   []questionView
	Closed []questionView

	Events      []eventView
	EventsTotal int

	Run       runView
	Output    string
	OutputCut bool
	// LiveURL is the live stream's, with the cursors of what the page
	// shows.
	LiveURL string

	Tools      []mcpserver.ToolRow
	ToolsError string
	Findings   []mcpserver.Finding
	Naming     string

	Running bool
	Mounts  []mcpserver.MountInfo
	Servers []serverView
}

// questionView is a question with what its form needs.
type questionView struct {
	*instance.Question
	InstanceID string
	CSRF       string
}

type eventView struct{ *instance.Event }

// runView is the latest run, for its summary.
type runView struct {
	*instance.Run
	// Sig changes whenever the summary would.
	Sig string
}

// serverView is an external server's health.
type serverView struct {
	proxy.ServerStatus
	// Listed: its tools are known (the endpoint runs).
	Listed bool
}

func newRunView(r *instance.Run) runView {
	v := runView{Run: r, Sig: "none"}
	if r != nil {
		v.Sig = r.ID + "/" + r.StartedAt.String()
		if r.EndedAt != nil {
			v.Sig += "/ended"
		}
	}
	return v
}

// instancePage is GET /ui/instances/{id}; a label or an id prefix is
// redirected to the id's page.
func (u *UI) instancePage(w http.ResponseWriter, r *http.Request, s *session) {
	rec, ok := u.record(w, r, s)
	if !ok {
		return
	}
	v, err := u.instanceView(r, rec, s)
	if err != nil {
		u.storeFailed(w, r, s, err)
		return
	}
	p := &page{Title: cmp.Or(rec.Name, rec.ID), CSRF: s.CSRF, Inst: v}
	if qid := r.URL.Query().Get("answered"); qid != "" {
		if q, err := u.o.Store.Question(r.Context(), rec.ID, qid); err == nil && q.Status == instance.QuestionAnswered {
			p.Flash = &flash{Text: fmt.Sprintf("Answered %s with %s: the agent's waiting call has it.", quote(q.Text), quote(q.Answer))}
		}
	}
	switch r.URL.Query().Get("restarted") {
	case "here":
		p.Flash = &flash{Text: "Asked the endpoint serving this instance to restart its MCP servers; they restart within a second (reload to see their state)."}
	case "fleet":
		p.Flash = &flash{Text: "Asked the endpoints serving this instance, on any host sharing the store, to restart its MCP servers; they restart within a second."}
	case "none":
		p.Flash = &flash{Text: "No endpoint serves this instance now: its MCP servers start with its next session."}
	}
	u.render(w, http.StatusOK, "instance", p)
}

// record reads the instance the path names, answering the error page (or
// a redirect to the id's page) when it is not one instance's full id.
func (u *UI) record(w http.ResponseWriter, r *http.Request, s *session) (*instance.Record, bool) {
	ref := r.PathValue("id")
	rec, err := u.o.Store.Get(r.Context(), ref)
	var nf *instance.NotFoundError
	var amb *instance.AmbiguousError
	switch {
	case errors.As(err, &nf):
		u.errorPage(w, r, s, http.StatusNotFound, "There is no instance "+quote(ref)+".", "It may have been deleted; the list of instances has those that exist.")
		return nil, false
	case errors.As(err, &amb):
		u.errorPage(w, r, s, http.StatusNotFound, err.Error(), "")
		return nil, false
	case err != nil:
		u.storeFailed(w, r, s, err)
		return nil, false
	case rec.ID != ref && r.Method == http.MethodGet:
		http.Redirect(w, r, "/ui/instances/"+rec.ID, http.StatusSeeOther)
		return nil, false
	case rec.ID != ref:
		u.errorPage(w, r, s, http.StatusNotFound, "There is no instance "+quote(ref)+".", "")
		return nil, false
	}
	return rec, true
}

func (u *UI) instanceView(r *http.Request, rec *instance.Record, s *session) (*instanceView, error) {
	ctx := r.Context()
	st := u.o.Store
	listed, err := st.Listing(ctx, rec)
	if err != nil {
		return nil, err
	}
	v := &instanceView{ID: rec.ID, Label: rec.Name, Agent: rec.Agent, Status: listed.Status,
		Workspace: rec.Workspace, Transport: rec.Transport.Kind, ServerName: rec.ServerName, Created: rec.CreatedAt}
	if st.SharesLogs() {
		v.Host = rec.Host // many hosts share the store: say whose it is
	}
	if rec.QuestionTimeout > 0 {
		v.QuestionTimeout = time.Duration(rec.QuestionTimeout).String()
	}
	qs, err := st.Questions(ctx, rec.ID, true)
	if err != nil {
		return nil, err
	}
	v.Open, v.Closed = splitQuestions(qs, rec.ID, s.CSRF)
	evs, err := st.Events(ctx, rec.ID, 0)
	if err != nil {
		return nil, err
	}
	v.EventsTotal = len(evs)
	var after int64
	if n := len(evs); n > 0 {
		after = evs[n-1].Seq
	}
	for _, e := range evs[max(0, len(evs)-shownEvents):] {
		v.Events = append(v.Events, eventView{e})
	}
	v.Run = newRunView(rec.LastRun)
	out, cursor, cut, err := u.outputTail(r, rec)
	if err != nil {
		return nil, err
	}
	v.Output, v.OutputCut = out, cut
	v.LiveURL = "/ui/instances/" + rec.ID + "/events?" + url.Values{"after": {itoa64(after)}, "log": {itoa64(cursor)}}.Encode()
	u.describe(rec, v)
	return v, nil
}

// splitQuestions is the open questions, oldest first, and the latest
// closed ones, newest first.
func splitQuestions(qs []*instance.Question, id, csrf string) (open, closed []questionView) {
	for _, q := range qs {
		qv := questionView{Question: q, InstanceID: id, CSRF: csrf}
		if q.Status == instance.QuestionOpen {
			open = append(open, qv)
		} else {
			closed = append(closed, qv)
		}
	}
	slices.Reverse(closed)
	return open, closed[:min(len(closed), shownClosed)]
}

// describe fills the names the instance's model sees and the health of
// its mounts and servers: the running endpoint's, if the daemon runs it,
// else the record's (the external servers not started, their tools not
// known). No secret is shown: mounts by name, kind and prefix only (never
// a path's environment or headers), a failed server's stderr with its
// secrets taken out (as GET /instances/ID/health gives it).
func (u *UI) describe(rec *instance.Record, v *instanceView) {
	n := rec.Capabilities.ToolNames
	v.Naming = string(n.Namespacing)
	if n.Template != "" {
		v.Naming += ": the model sees " + n.Template
	}
	plan, err := provision.RecordToolset(rec)
	if err != nil {
		v.ToolsError = "The instance's mounts do not resolve, so it cannot be served: " + err.Error()
		return
	}
	var health mcpserver.Health
	var listings []mcpserver.ServerListing
	v.Running = u.o.Live(rec.ID, func(ep Endpoint) {
		health = ep.Health()
		listings = liveListings(plan.Mounts, health.Servers, ep.ToolNames())
	})
	if !v.Running {
		for _, m := range plan.Mounts {
			health.Mounts = append(health.Mounts, mcpserver.MountInfo{Kind: m.Kind, Name: m.Name, EffectivePrefix: m.EffectivePrefix, PrefixOrigin: m.PrefixOrigin})
			if m.Kind == mount.KindServer {
				health.Servers = append(health.Servers, proxy.ServerStatus{Name: m.Name, State: "not started"})
			}
		}
	}
	v.Mounts = health.Mounts
	for _, s := range health.Servers {
		v.Servers = append(v.Servers, serverView{ServerStatus: s, Listed: v.Running && s.State == proxy.StateUp})
	}
	d, err := mcpserver.DescribeTools(rec.ServerName, n, plan.Mounts, listings)
	if err != nil {
		v.ToolsError = "The instance's names cannot be made: " + err.Error()
		return
	}
	v.Tools = d.Tools
	for _, f := range d.Findings {
		if f.Code != mcpserver.FindingServerDown {
			v.Findings = append(v.Findings, f)
		}
	}
}

// liveListings is what a running endpoint's external servers offer, as
// [mcpserver.DescribeTools] takes it: each server's own tool names as the
// registry holds them, or why it is not up.
func liveListings(mounts []mount.Resolved, statuses []proxy.ServerStatus, names []mcpserver.NamedTool) []mcpserver.ServerListing {
	var out []mcpserver.ServerListing
	for _, m := range mounts {
		if m.Kind != mount.KindServer {
			continue
		}
		l := mcpserver.ServerListing{Mount: m.Name, State: mcpserver.ListingUnlisted, Tools: []string{}}
		if i := slices.IndexFunc(statuses, func(s proxy.ServerStatus) bool { return s.Name == m.Name }); i >= 0 {
			switch st := statuses[i]; st.State {
			case proxy.StateUp:
				l.State = mcpserver.ListingUp
			case proxy.StateDown:
				l.State, l.Error = mcpserver.ListingDown, st.Error
			}
		}
		if l.State == mcpserver.ListingUp {
			for _, t := range names {
				if t.Mount == m.Name && strings.HasPrefix(t.Source, "mcp ") {
					l.Tools = append(l.Tools, t.Base)
				}
			}
		}
		out = append(out, l)
	}
	return out
}
