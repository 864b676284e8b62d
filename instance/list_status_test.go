package instance_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/instance"
)

// TestListStatusIndexed is the bug where `instance list --status S` looked
// at the latest event of every instance (a correlated subquery no index
// supports), so that a rare status read the whole store: --status is now a
// range of the instances_status index and reads no event at all, with or
// without --limit.
func TestListStatusIndexed(t *testing.T) {
	st := openStore(t)
	for _, o := range []instance.ListOptions{
		{Status: "done"},
		{Status: "done", Limit: 5},
		{Status: "blocked", Since: time.Now().Add(-time.Hour), Limit: 5},
	} {
		plan, err := st.ListQueryPlanForTest(o)
		if err != nil {
			t.Fatal(err)
		}
		var viaIndex bool
		for _, step := range plan {
			if strings.HasPrefix(step, "SCAN i") {
				t.Errorf("%+v: the listing scans every instance: %q (plan %q)", o, step, plan)
			}
			if strings.Contains(step, "events") || strings.Contains(step, " e ") || strings.HasSuffix(step, " e") {
				t.Errorf("%+v: the listing reads events: %q (plan %q)", o, step, plan)
			}
			viaIndex = viaIndex || strings.Contains(step, "instances_status")
		}
		if !viaIndex {
			t.Errorf("%+v: --status does not use the instances_status index: plan %q", o, plan)
		}
	}
	// Nor does the status a listing prints read the events.
	plan, err := st.ListQueryPlanForTest(instance.ListOptions{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range plan {
		if strings.Contains(step, "events") {
			t.Errorf("the listing reads events for the status column: %q (plan %q)", step, plan)
		}
	}
}

// TestListStatusFollowsEveryWriter: the status a listing prints and filters
// on is the latest event's, whoever stored it: report_progress (AddEvent,
// RecordProgress), `instance run`'s start and end (StartRun, EndRun, and an
// EndRun that leaves the model's final word), and a plain INSERT, as an
// endpoint of an older agentctl still serving the store makes.
func TestListStatusFollowsEveryWriter(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	progress, run, modelDone, raw, none := create(t, st, "auggie", nil), create(t, st, "opencode", nil),
		create(t, st, "opencode", nil), create(t, st, "codex", nil), create(t, st, "auggie", nil)
	want := map[string]string{none.ID: ""}

	if err := addEvent(st, progress.ID, "running"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RecordProgress(ctx, progress.ID, "report_progress_agentctl", "blocked", "waiting", nil); err != nil {
		t.Fatal(err)
	}
	want[progress.ID] = "blocked"

	startEnd := func(rec *instance.Record, model string) {
		t.Helper()
		seq, err := st.StartRun(ctx, rec.ID, instance.Run{Program: "opencode", Mode: "headless", PID: 42, StartedAt: time.Now()},
			instance.Event{Tool: instance.RunTool, Status: "running", Message: "started"})
		if err != nil {
			t.Fatal(err)
		}
		if got := listedStatus(t, st, rec.ID); got != "running" {
			t.Errorf("after StartRun: status %q, want running", got)
		}
		if model != "" {
			if err := addEvent(st, rec.ID, model); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := st.EndRun(ctx, rec.ID, seq, instance.Run{Program: "opencode", Mode: "headless"},
			instance.Event{Tool: instance.RunTool, Status: "failed", Message: "exited 1"}); err != nil {
			t.Fatal(err)
		}
	}
	startEnd(run, "")
	want[run.ID] = "failed"
	startEnd(modelDone, "done") // the model's done stands: EndRun adds nothing
	want[modelDone.ID] = "done"

	if err := st.ExecForTest(`INSERT INTO events (instance_id, at, tool, status, message) VALUES ('` + raw.ID + `', '', 't', 'blocked', 'm')`); err != nil {
		t.Fatal(err)
	}
	want[raw.ID] = "blocked"

	for id, w := range want {
		if got := listedStatus(t, st, id); got != w {
			t.Errorf("%s: status %q, want %q", id, got, w)
		}
	}
	for _, status := range []string{"running", "blocked", "done", "failed"} {
		var got, exp []string
		for l, err := range st.Records(ctx, instance.ListOptions{Status: status}) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, l.ID)
		}
		for _, rec := range []*instance.Record{progress, run, modelDone, raw, none} {
			if want[rec.ID] == status {
				exp = append(exp, rec.ID)
			}
		}
		if strings.Join(got, ",") != strings.Join(exp, ",") {
			t.Errorf("--status %s: %v, want %v", status, got, exp)
		}
	}
}

// listedStatus is the status Store.Records yields for instance id.
func listedStatus(t *testing.T, st *instance.Store, id string) string {
	t.Helper()
	for l, err := range st.Records(context.Background(), instance.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if l.ID == id {
			return l.Status
		}
	}
	t.Fatalf("instance %s not listed", id)
	return ""
}
