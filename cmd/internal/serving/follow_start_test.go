package serving

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/cmd/internal/provision"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/internal/testkit"
)

// Follow reads the record as soon as its watch has begun: a change made
// before then, and announced to the watchers of that moment only, is
// served although the poll is an hour.
func TestFollowReadsWhatChangedBeforeItsWatch(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	st, err := instance.Open(ctx, state)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cat, err := agents.Load(agents.LoadOptions{UserDir: filepath.Join(t.TempDir(), "none")})
	if err != nil {
		t.Fatal(err)
	}
	def, err := cat.Lookup("auggie")
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := provision.Create(ctx, func(ctx context.Context) (*instance.Store, error) { return instance.Open(ctx, state) },
		provision.CreateOptions{Definition: def, Workspace: t.TempDir(), Executable: "/opt/agentctl", QuestionTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	other, stopOther := st.WatchEvents(ctx, "another instance")
	defer stopOther()
	time.Sleep(2 * instance.SQLiteWatchInterval) // the watch's start wake
	select {
	case <-other:
	default:
	}
	if _, err := st.UpdateInstance(ctx, rec.ID, func(r *instance.Record) (map[string][]byte, error) {
		r.Restarts = map[string]time.Time{instance.RestartAll: time.Now()}
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-other:
	case <-time.After(testkit.Wait):
		t.Fatal("the store's watch did not announce the restart request")
	}

	// rec is the record from before the request.
	log := testkit.NewBuffer("restarting external servers")
	_, stop, err := Build(ctx, st, rec, EndpointOptions{Version: "test", FollowInterval: time.Hour},
		slog.New(slog.NewTextHandler(log, nil)), func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	select {
	case <-log.Seen():
	case <-time.After(testkit.Wait):
		t.Fatalf("the restart asked for before Follow's watch began was not carried out; log:\n%s", log.String())
	}
}
