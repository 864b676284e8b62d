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
	u.log.Info("external servers restarted from the web page", "instance", rec.ID)
	http.Redirect(w, r, "/ui/instances/"+rec.ID+"?restarted=1#health", http.StatusSeeOther)
}
