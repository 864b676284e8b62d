//go:build unix

package instance_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentctl/agentctl/instance"
)

// TestConnectConcurrent: instances connected to one workspace file at the
// same moment all end up in it (none of the edits is lost).
func TestConnectConcurrent(t *testing.T) {
	st := openStore(t)
	ws := t.TempDir()
	var recs []*instance.Record
	for i := range 6 {
		recs = append(recs, create(t, st, "cursor", func(o *instance.CreateOptions) {
			o.Workspace = ws
			o.ServerName = "s" + string(rune('a'+i))
		}))
	}
	for round := range 5 {
		_ = os.Remove(filepath.Join(ws, ".cursor", "mcp.json"))
		var wg sync.WaitGroup
		for _, r := range recs {
			wg.Go(func() {
				if _, err := instance.Connect(r, instance.ConnectOptions{}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		data, err := os.ReadFile(filepath.Join(ws, ".cursor", "mcp.json"))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			MCPServers map[string]any `json:"mcpServers"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.MCPServers) != len(recs) {
			t.Fatalf("round %d: %d of %d entries survived concurrent connects:\n%s", round, len(doc.MCPServers), len(recs), data)
		}
	}
}
