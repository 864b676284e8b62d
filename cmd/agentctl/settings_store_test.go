package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/instance"
	"github.com/spf13/pflag"
)

// TestConfigStore: the store comes from --store > AGENTCTL_STORE > the
// config file; a --store without a password (as create writes it into a
// client's entry) takes the password of AGENTCTL_STORE when that names the
// same database as the same user, and never another database's.
func TestConfigStore(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte("store = \"postgres://file@db/fleet\"\nhost = \"from-file\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want instance.StoreURL
		host string
	}{
		{"default", nil, nil, "", ""},
		{"config file", []string{"--config", cfg}, nil, "postgres://file@db/fleet", "from-file"},
		{"env over file", []string{"--config", cfg}, map[string]string{"AGENTCTL_STORE": "postgres://env@db/fleet", "AGENTCTL_HOST": "h"},
			"postgres://env@db/fleet", "h"},
		{"flag over env", []string{"--store", "sqlite:/x/state.db"}, map[string]string{"AGENTCTL_STORE": "postgres://env@db/fleet"},
			"sqlite:/x/state.db", ""},
		{"password from env for the same database", []string{"--store", "postgres://u@db:5432/fleet?sslmode=disable"},
			map[string]string{"AGENTCTL_STORE": "postgres://u:pw@db:5432/fleet?sslmode=disable"},
			"postgres://u:pw@db:5432/fleet?sslmode=disable", ""},
		{"not another database's", []string{"--store", "postgres://u@db:5432/fleet"},
			map[string]string{"AGENTCTL_STORE": "postgres://u:pw@db:5432/other"}, "postgres://u@db:5432/fleet", ""},
		{"not another user's", []string{"--store", "postgres://u@db:5432/fleet"},
			map[string]string{"AGENTCTL_STORE": "postgres://v:pw@db:5432/fleet"}, "postgres://u@db:5432/fleet", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			for _, s := range settings {
				if s.Flag != "" {
					addSettingFlag(fs, s.Key)
				}
			}
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			vars := map[string]string{"HOME": dir}
			for k, v := range tc.env {
				vars[k] = v
			}
			c := newConfig(func(k string) string { return vars[k] })
			if err := c.load(fs); err != nil {
				t.Fatal(err)
			}
			if got := c.Store(); got != tc.want {
				t.Errorf("store %q, want %q", got, tc.want)
			}
			if got := c.String(keyHost); got != tc.host {
				t.Errorf("host %q, want %q", got, tc.host)
			}
		})
	}
}
