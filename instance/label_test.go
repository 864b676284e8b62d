package instance_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/instance"
)

// TestLabelThatReadsAsAnIDIsRefused is the bug where `instance delete X`
// twice deleted two instances: X was the label of one and a prefix of the
// other's id, so the first delete took the label and the second the prefix.
func TestLabelThatReadsAsAnIDIsRefused(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	first := create(t, st, "auggie", nil)
	label := first.ID[:10]

	def, err := catalog(t).Lookup("auggie")
	if err != nil {
		t.Fatal(err)
	}
	second, err := st.CreateInstance(ctx, instance.CreateOptions{Definition: def, Name: label, Workspace: t.TempDir(), Executable: "/x/agentctl"})
	if err == nil {
		// Show the harm the refusal prevents.
		a, _ := st.Delete(ctx, label)
		b, _ := st.Delete(ctx, label)
		t.Fatalf("label %q (a prefix of %s) was accepted for %s; deleting it twice deleted %v and %v", label, first.ID, second.ID, id(a), id(b))
	}
	if !errors.Is(err, instance.ErrInvalid) {
		t.Fatalf("want ErrInvalid, got %v", err)
	}
	for _, want := range []string{`label "` + label + `"`, "instance id", "start the label with a letter"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not say %q", err, want)
		}
	}

	// The prefix now names only the first instance: one delete, then not found.
	if got, err := st.Delete(ctx, label); err != nil || got.ID != first.ID {
		t.Fatalf("delete %s = %v, %v; want %s", label, id(got), err, first.ID)
	}
	if got, err := st.Delete(ctx, label); !errors.Is(err, instance.ErrNotFound) {
		t.Fatalf("a second delete of %s must find nothing, got %v, %v", label, id(got), err)
	}
}

func id(r *instance.Record) string {
	if r == nil {
		return "nothing"
	}
	return r.ID
}

func TestValidateLabel(t *testing.T) {
	refused := []string{
		"0", "7", "01", "01jq3", "01JQ3", "7zzzzzzzzzzzzzzzzzzzzzzzzz", "01jq3m4k8n9p7q6r5s4t3v2w1x", "42",
	}
	accepted := []string{
		"fix-login", "test", "dev", "web", "backend", "srv", "p1", "a", "8ball", "9", "01-fix", "01o", "0_1", "0.1",
		"01jq3m4k8n9p7q6r5s4t3v2w1x0", // 27 characters: longer than any id
	}
	for _, l := range refused {
		if err := instance.ValidateLabel(l); !errors.Is(err, instance.ErrInvalid) {
			t.Errorf("ValidateLabel(%q) = %v, want ErrInvalid", l, err)
		}
	}
	for _, l := range accepted {
		if err := instance.ValidateLabel(l); err != nil {
			t.Errorf("ValidateLabel(%q) = %v, want nil", l, err)
		}
	}
	if err := instance.ValidateLabel("bad label!"); !errors.Is(err, instance.ErrInvalid) {
		t.Errorf("a label with a space and '!' must be refused, got %v", err)
	}
}

// TestLegacyLabelStillResolves: a record labelled, before the rule, with
// another instance's id still resolves, exact id first.
func TestLegacyLabelStillResolves(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	a := create(t, st, "auggie", nil)
	b := create(t, st, "auggie", func(o *instance.CreateOptions) { o.Name = "tmp" })
	if err := st.ExecForTest(`UPDATE instances SET name = '` + a.ID + `' WHERE id = '` + b.ID + `'`); err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[string]string{a.ID: a.ID, b.ID: b.ID} {
		if got, err := st.Get(ctx, ref); err != nil || got.ID != want {
			t.Errorf("Get(%q) = %v, %v; want %s", ref, id(got), err, want)
		}
	}
}
