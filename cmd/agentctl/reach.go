package main

import (
	"context"

	"github.com/agentctl/agentctl/instance"
)

// reach is what a change of an instance's record (its mounts, its token, a
// restart) means for the sessions running it, as the commands that make
// one say it, and print under "running" with -o json.
type reach struct {
	// ServedHere: an endpoint on this host serves the instance now.
	ServedHere bool `json:"served_here"`
	// SharedStore: the store is shared (PostgreSQL), so endpoints on other
	// hosts may serve it too; they follow the change as well.
	SharedStore bool `json:"shared_store"`
	// ClientRelists: the instance's client lists its tools again on
	// notifications/tools/list_changed (its tools_list_changed capability).
	ClientRelists bool `json:"client_relists"`
	// RestartClient: a running session of the client must be restarted
	// for its model to see the change.
	RestartClient bool `json:"restart_client"`
}

// sessionReach is [reach] for instance rec of st.
func sessionReach(ctx context.Context, st *instance.Store, rec *instance.Record) reach {
	live, _ := st.Live(ctx, rec.ID) // unknown counts as not served
	return reach{ServedHere: live, SharedStore: st.SharesLogs(), ClientRelists: rec.Capabilities.ToolsListChanged}
}

// tellMounts says on stderr how a mount change reaches running sessions,
// and sets RestartClient.
func (r *reach) tellMounts(io *IOStreams, rec *instance.Record) {
	switch {
	case r.ServedHere:
		io.Narrate("The endpoint serving it on this host serves the new mounts within a second, without a restart.")
	case r.SharedStore:
		io.Narrate("Endpoints serving it, on any host sharing this store, serve the new mounts within a second, without a restart.")
	default:
		io.Narrate("No endpoint serves it now; the next one serves the new mounts.")
		return
	}
	if r.ClientRelists {
		io.Narrate("%s lists its tools again when told (notifications/tools/list_changed): a running session sees the change at once.", rec.Agent)
		return
	}
	r.RestartClient = true
	io.Narrate("%s does not list its tools again: restart a running session for its model to see the change (get_instance tells the model its tools changed).", rec.Agent)
}
