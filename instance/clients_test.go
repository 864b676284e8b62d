package instance_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/instance"
)

// TestClientFilesGolden pins, for every catalog client, every file it is
// given, in one golden file: the instance's own configuration (stdio and
// HTTP) and what `instance connect` writes in each scope into a new file
// (or why it writes nothing there).
func TestClientFilesGolden(t *testing.T) {
	st := openStore(t)
	token := regexp.MustCompile(`agt_[A-Za-z0-9_-]+`)
	for _, def := range catalog(t).Definitions() {
		t.Run(def.ID, func(t *testing.T) {
			ws, home := t.TempDir(), t.TempDir()
			var b strings.Builder
			add := func(title string, data []byte, rec *instance.Record) {
				s := fmt.Sprintf("-- %s --\n%s", title, data)
				s = strings.NewReplacer(rec.ID, "ID", st.Dir(), "STATE", ws, "WORKSPACE", home, "~").Replace(s)
				b.WriteString(token.ReplaceAllString(s, "TOKEN"))
			}
			for _, tr := range []string{instance.TransportStdio, instance.TransportHTTP} {
				rec := create(t, st, def.ID, func(o *instance.CreateOptions) {
					o.Workspace, o.QuestionTimeout, o.Transport = ws, 10*time.Minute, instance.Transport{Kind: tr}
				})
				data, err := os.ReadFile(rec.MCPConfigPath)
				if err != nil {
					t.Fatal(err)
				}
				add(tr+": "+rec.Files[0], data, rec)
				if tr == instance.TransportHTTP {
					break
				}
				for _, scope := range []string{instance.ScopeWorkspace, instance.ScopeUser} {
					res, err := instance.Connect(rec, instance.ConnectOptions{Scope: scope, Getenv: connectEnv(home)})
					if err != nil {
						add("connect --scope "+scope, []byte(err.Error()+"\n"), rec)
						continue
					}
					data, err := os.ReadFile(res.Path)
					if err != nil {
						t.Fatal(err)
					}
					add(fmt.Sprintf("connect --scope %s: %s (%s)", scope, res.Path, res.Key), data, rec)
				}
			}
			golden(t, "clients/"+def.ID+".txtar", []byte(b.String()))
		})
	}
}

// TestConnectRecordWithoutFiles: a record made before records kept their
// client's files finds them by its agent and format in the catalog.
func TestConnectRecordWithoutFiles(t *testing.T) {
	st := openStore(t)
	home := t.TempDir()
	for _, agent := range []string{"cursor", "vscode-copilot", "kilo", "codex", "continue"} {
		rec := create(t, st, agent, nil)
		for _, scope := range []string{instance.ScopeWorkspace, instance.ScopeUser} {
			o := instance.ConnectOptions{Scope: scope, Getenv: connectEnv(home)}
			want, werr := instance.ConnectPath(rec, o)
			old := *rec
			old.Client = nil
			got, gerr := instance.ConnectPath(&old, o)
			if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
				t.Errorf("%s %s: old record %q, %v; want %q, %v", agent, scope, got, gerr, want, werr)
			}
		}
		old := *rec
		old.Client = nil
		if a, err := instance.InstanceEntry(&old); err != nil || a == nil {
			t.Errorf("%s: old record's entry: %v", agent, err)
		}
	}
}
