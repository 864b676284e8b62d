package mcpserver

import (
	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/mcpserver/proxy"
)

// Health is what an endpoint served over HTTP advertises on its health
// URL: how its tools are named and how its external servers are doing.
// It holds names and states only, never a path, command, URL, header or
// environment value (those may hold secrets): the same facts get_instance
// gives the model.
type Health struct {
	ServerName string `json:"server_name"`
	// Capability is the naming capability the endpoint presents names for.
	Capability HealthCapability `json:"capability"`
	// Mounts are the instance's mounts with their effective prefixes.
	Mounts []MountInfo `json:"mounts"`
	// Servers are the external servers' states: connected, starting,
	// failed (and why), ...
	Servers []proxy.ServerStatus `json:"mcp_servers"`
}

// HealthCapability is the part of [agents.ToolNaming] that says which names
// the endpoint presents.
type HealthCapability struct {
	Namespacing agents.Namespacing `json:"namespacing"`
	Template    string             `json:"template"`
}

// Health reports the endpoint's [Health].
func (e *Endpoint) Health() Health {
	h := Health{
		ServerName: e.cfg.ServerName,
		Capability: HealthCapability{Namespacing: e.cfg.Naming.Namespacing, Template: e.cfg.Naming.Template},
		Mounts:     e.mountInfo(),
		Servers:    e.ServerStatuses(),
	}
	if h.Servers == nil {
		h.Servers = []proxy.ServerStatus{}
	}
	return h
}

// Shutdown stops the external servers that [Endpoint.Start] started, waits
// for them to exit, and closes the mounts: the end of an endpoint served
// over HTTP, where no single session's end ([Endpoint.Run]) marks it.
func (e *Endpoint) Shutdown() {
	e.pool.Stop()
	e.pool.Wait()
	e.Close()
}
