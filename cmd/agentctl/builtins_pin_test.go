package main

import (
	"slices"
	"testing"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
)

// TestBuiltinNamesPinned: agents checks definitions against its own copy of
// the built-in tool bases and default server name (it imports nothing of
// ours); the copies must be the ones the endpoint and the store use.
func TestBuiltinNamesPinned(t *testing.T) {
	if !slices.Equal(agents.BuiltinToolBases, mcpserver.BuiltinBases) {
		t.Errorf("agents.BuiltinToolBases = %q, mcpserver.BuiltinBases = %q; make them equal", agents.BuiltinToolBases, mcpserver.BuiltinBases)
	}
	if agents.DefaultServerName != instance.DefaultServerName {
		t.Errorf("agents.DefaultServerName = %q, instance.DefaultServerName = %q; make them equal", agents.DefaultServerName, instance.DefaultServerName)
	}
}
