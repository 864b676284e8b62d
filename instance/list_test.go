package instance_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/instance"
)

// TestRecordsFilters pins the selection of Store.Records: --since by the
// ids' time, --limit keeping the most recent and yielding oldest first,
// --agent, and --status by each instance's latest report.
func TestRecordsFilters(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	st, err := instance.Open(ctx, t.TempDir(), instance.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var ids []string
	for i, agent := range []string{"auggie", "claude-code", "auggie", "codex"} {
		now = now.Add(time.Duration(i+1) * time.Hour) // 13:00, 15:00, 18:00, 22:00
		ids = append(ids, create(t, st, agent, nil).ID)
	}
	if err := addEvent(st, ids[0], "running"); err != nil {
		t.Fatal(err)
	}
	if err := addEvent(st, ids[0], "done"); err != nil {
		t.Fatal(err)
	}
	if err := addEvent(st, ids[2], "running"); err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		o    instance.ListOptions
		want []string
	}{
		{"all", instance.ListOptions{}, ids},
		{"limit keeps the newest, oldest first", instance.ListOptions{Limit: 2}, ids[2:]},
		{"limit over the count", instance.ListOptions{Limit: 10}, ids},
		{"agent", instance.ListOptions{Agent: "auggie"}, []string{ids[0], ids[2]}},
		{"agent and limit", instance.ListOptions{Agent: "auggie", Limit: 1}, ids[2:3]},
		{"since is inclusive to the millisecond", instance.ListOptions{Since: day.Add(15 * time.Hour)}, ids[1:]},
		{"since just after", instance.ListOptions{Since: day.Add(15*time.Hour + time.Millisecond)}, ids[2:]},
		{"since before the epoch", instance.ListOptions{Since: time.Unix(-10, 0)}, ids},
		{"status is the latest report", instance.ListOptions{Status: "running"}, ids[2:3]},
		{"status done", instance.ListOptions{Status: "done"}, ids[:1]},
		{"everything at once", instance.ListOptions{Agent: "auggie", Status: "running", Since: day, Limit: 5}, ids[2:3]},
		{"nothing", instance.ListOptions{Agent: "nobody"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for l, err := range st.Records(ctx, tc.o) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, l.ID)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	for l, err := range st.Records(ctx, instance.ListOptions{Agent: "auggie"}) {
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{ids[0]: "done", ids[2]: "running"}[l.ID]
		if l.Status != want {
			t.Errorf("%s: status %q, want %q", l.ID, l.Status, want)
		}
	}
}

func addEvent(st *instance.Store, id, status string) error {
	_, err := st.AddEvent(context.Background(), instance.Event{InstanceID: id, Tool: "report_progress_agentctl", Status: status, Message: status})
	return err
}

// TestRecordsOpenQuestions pins the open_questions count of Store.Records:
// only open questions count (answered, expired and cancelled ones do not),
// per instance, with and without a limit, and through the questions_instance
// index, so that a listing's cost does not grow with the questions of the
// instances it does not print.
func TestRecordsOpenQuestions(t *testing.T) {
	ctx := context.Background()
	st, err := instance.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	a, b, c := create(t, st, "auggie", nil), create(t, st, "codex", nil), create(t, st, "auggie", nil)
	ask := func(id string) *instance.Question {
		t.Helper()
		q, err := st.AddQuestion(ctx, id, "Which?", nil)
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	ask(a.ID)
	ask(a.ID)
	if _, err := st.Answer(ctx, a.ID, ask(a.ID).ID, "yes", false); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ExpireQuestion(ctx, b.ID, ask(b.ID).ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CancelQuestion(ctx, b.ID, ask(b.ID).ID); err != nil {
		t.Fatal(err)
	}
	ask(c.ID)
	want := map[string]int{a.ID: 2, b.ID: 0, c.ID: 1}
	for _, o := range []instance.ListOptions{{}, {Limit: 2}, {Agent: "auggie"}} {
		n := 0
		for l, err := range st.Records(ctx, o) {
			if err != nil {
				t.Fatal(err)
			}
			n++
			if l.OpenQuestions != want[l.ID] {
				t.Errorf("%+v: %s has %d open questions, want %d", o, l.ID, l.OpenQuestions, want[l.ID])
			}
		}
		if n == 0 {
			t.Errorf("%+v: nothing listed", o)
		}
	}
	plan, err := st.ListQueryPlanForTest(instance.ListOptions{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	var viaIndex bool
	for _, step := range plan {
		if strings.Contains(step, "SCAN q") || strings.Contains(step, "SCAN questions") {
			t.Errorf("the listing scans the questions table: %q (plan %q)", step, plan)
		}
		viaIndex = viaIndex || strings.Contains(step, "questions_instance")
	}
	if !viaIndex {
		t.Errorf("the open-question count does not use the questions_instance index: plan %q", plan)
	}
}
