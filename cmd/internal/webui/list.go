package webui

import (
	"cmp"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/instance"
)

// maxRows bounds the rows of the instances page: past it, the most
// recently created matching instances are shown, and the page says so.
const maxRows = 500

// statusWaiting is the status filter's value for the instances with an
// open question (not a reported status).
const statusWaiting = "waiting"

// listView is the instances page.
type listView struct {
	Query, Status string
	Statuses      []option
	Rows          []listRow
	// Total is the number of instances that match, Shown how many rows
	// there are (at most maxRows); Any says whether the store has any
	// instance at all.
	Total    int
	Filtered bool
	Any      bool
	Inbox    []inboxRow
	// Corrupt counts the records that did not decode (left out).
	Corrupt int
}

type option struct {
	Value, Label string
	Selected     bool
}

// listRow is one instance on the instances page.
type listRow struct {
	ID, Label, Agent, Status, Host, Workspace string
	Open                                      int
	// Run says how the latest run stands, in words ("" for none).
	Run      string
	RunState string // running, done, failed or ""
	Activity time.Time
}

// inboxRow is an open question on the instances page.
type inboxRow struct {
	InstanceID, Instance, QuestionID, Text string
	Asked                                  time.Time
}

// listPage is GET /: every instance, newest activity first, filtered by
// the GET form's q (a text every instance's label, id, agent, host,
// workspace or status is searched for) and status.
func (u *UI) listPage(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	st := u.o.Store
	v := &listView{Query: strings.TrimSpace(r.URL.Query().Get("q")), Status: r.URL.Query().Get("status")}
	p := &page{Title: "Instances", CSRF: s.CSRF, List: v}
	statuses := append(instance.ProgressStatuses(), statusWaiting)
	if v.Status != "" && !slices.Contains(statuses, v.Status) {
		p.Flash = &flash{Error: true, Text: "Unknown status " + quote(v.Status) + ": showing every status."}
		v.Status = ""
	}
	v.Statuses = []option{{Value: "", Label: "any status", Selected: v.Status == ""}}
	for _, st := range statuses {
		label := st
		if st == statusWaiting {
			label = "waiting for an answer"
		}
		v.Statuses = append(v.Statuses, option{Value: st, Label: label, Selected: st == v.Status})
	}
	v.Filtered = v.Query != "" || v.Status != ""

	lo := instance.ListOptions{}
	if v.Status != statusWaiting {
		lo.Status = v.Status
	}
	needle := strings.ToLower(v.Query)
	shared := st.SharesLogs() // many hosts: say whose each instance is
	var rows []listRow
	for l, err := range st.Records(ctx, lo) {
		var ce *instance.CorruptRecordError
		switch {
		case errors.As(err, &ce):
			v.Corrupt++
			continue
		case err != nil:
			u.storeFailed(w, r, s, err)
			return
		}
		if v.Status == statusWaiting && l.OpenQuestions == 0 {
			continue
		}
		row := listRow{ID: l.ID, Label: l.Name, Agent: l.Agent, Status: l.Status, Workspace: l.Workspace,
			Open: l.OpenQuestions, Activity: l.CreatedAt}
		if shared {
			row.Host = l.Host // which host's workspace it is
		}
		if lr := l.LastRun; lr != nil {
			row.Activity = latest(row.Activity, lr.StartedAt)
			switch {
			case lr.EndedAt == nil:
				row.RunState, row.Run = instance.StatusRunning, "running since "+ago(lr.StartedAt)
			case lr.ExitCode != nil && *lr.ExitCode == 0:
				row.Activity = latest(row.Activity, *lr.EndedAt)
				row.RunState, row.Run = instance.StatusDone, "exit 0, "+ago(*lr.EndedAt)
			default:
				row.Activity = latest(row.Activity, *lr.EndedAt)
				code := "ended"
				if lr.ExitCode != nil {
					code = "exit " + itoa(*lr.ExitCode)
				}
				row.RunState, row.Run = instance.StatusFailed, code+", "+ago(*lr.EndedAt)
			}
		}
		if needle != "" && !matches(needle, row) {
			continue
		}
		rows = append(rows, row)
	}
	v.Total = len(rows)
	if len(rows) > maxRows {
		// Records yields oldest first: keep the newest.
		rows = rows[len(rows)-maxRows:]
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	act, err := st.LastActivity(ctx, ids)
	if err != nil {
		u.storeFailed(w, r, s, err)
		return
	}
	for i := range rows {
		rows[i].Activity = latest(rows[i].Activity, act[rows[i].ID])
	}
	slices.SortStableFunc(rows, func(a, b listRow) int {
		if c := b.Activity.Compare(a.Activity); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	v.Rows = rows
	if v.Total > 0 || v.Filtered {
		v.Any = true
		if v.Total == 0 {
			n, err := st.Count(ctx)
			if err != nil {
				u.storeFailed(w, r, s, err)
				return
			}
			v.Any = n > 0
		}
	}
	inbox, err := st.Inbox(ctx, 20)
	if err != nil {
		u.storeFailed(w, r, s, err)
		return
	}
	for _, q := range inbox {
		v.Inbox = append(v.Inbox, inboxRow{InstanceID: q.InstanceID, Instance: cmp.Or(q.InstanceName, q.InstanceID),
			QuestionID: q.ID, Text: q.Text, Asked: q.AskedAt})
	}
	u.render(w, http.StatusOK, "list", p)
}

// matches reports whether the row's label, id, agent, host, workspace or
// status contains needle (lower case).
func matches(needle string, r listRow) bool {
	for _, f := range []string{r.Label, r.ID, r.Agent, r.Host, r.Workspace, statusWord(r.Status)} {
		if strings.Contains(strings.ToLower(f), needle) {
			return true
		}
	}
	return false
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// storeFailed is the page for a store that failed to answer.
func (u *UI) storeFailed(w http.ResponseWriter, r *http.Request, s *session, err error) {
	u.log.Error("web page: the store failed", "path", r.URL.Path, "error", err)
	u.errorPage(w, r, s, http.StatusServiceUnavailable, "The store did not answer: "+err.Error(), "Reload the page in a moment; `agentctl serve`'s log says more.")
}
