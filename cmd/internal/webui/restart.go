package webui

import (
	"errors"
	"net/http"

	"github.com/agentctl/agentctl/instance"
)

// restart is POST /ui/instances/{id}/restart (the session's CSRF token
// checked first): it asks the endpoints serving the instance to restart
// its external MCP servers ([instance.Store.RequestRestart]), as
// `agentctl instance restart` does, and shows the instance's page again.
func (u *UI) restart(w http.ResponseWriter, r *http.Request, s *session) {
	rec, ok := u.record(w, r, s)
	if !ok {
		return
	}
	_, err := u.o.Store.RequestRestart(r.Context(), rec.ID, nil)
	var inv *instance.InvalidError
	switch {
	case errors.As(err, &inv):
		u.errorPage(w, r, s, http.StatusConflict, inv.Error(), "")
		return
	case err != nil:
		u.storeFailed(w, r, s, err)
		return
	}
	// Where the request goes, for the page to say (as the CLI does).
	where := "none"
	if live, _ := u.o.Store.Live(r.Context(), rec.ID); live {
		where = "here"
	} else if u.o.Store.SharesLogs() {
		where = "fleet"
	}
	u.log.Info("restart of the external servers asked from the web page", "instance", rec.ID, "served", where)
	http.Redirect(w, r, "/ui/instances/"+rec.ID+"?restarted="+where+"#health", http.StatusSeeOther)
}
