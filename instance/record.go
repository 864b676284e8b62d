package instance

import (
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/mcpserver/mount"
)

// Record is an instance as stored and as printed by `instance show -o json`.
// The JSON field names are part of the CLI contract: add fields, never rename.
type Record struct {
	ID           string              `json:"id"`
	Name         string              `json:"name"`
	Agent        string              `json:"agent"`
	CreatedAt    time.Time           `json:"created_at"`
	ServerName   string              `json:"server_name"`
	Capabilities agents.Capabilities `json:"capabilities"`
	// ConfigFormat is the client's native MCP configuration format (snapshotted).
	ConfigFormat   string           `json:"config_format"`
	Workspace      string           `json:"workspace"`
	ToolPrefixMode string           `json:"tool_prefix_mode"`
	Mounts         []mount.Resolved `json:"mounts"`
	Transport      Transport        `json:"transport"`
	MCPConfigPath  string           `json:"mcp_config_path"`
	// Dir is the instance's directory, holding the files written for its client.
	Dir string `json:"dir"`
	// QuestionTimeout is how long ask_user_question waits for an answer.
	QuestionTimeout Duration `json:"question_timeout"`
	// Files lists the files written into Dir for the client and the model
	// (the MCP configuration, instructions.md, skills), relative to Dir.
	Files []string `json:"files"`
	// LastRun is the latest `agentctl instance run` of the instance, if any.
	LastRun *Run `json:"last_run,omitempty"`
}

// Transport says how the client reaches the endpoint.
type Transport struct {
	Kind string `json:"kind"`
}

// Duration is a time.Duration written as "10m0s" in JSON.
type Duration = mount.Duration

// Question is a question asked by ask_user_question and waiting for, or
// holding, an answer.
type Question struct {
	ID         string     `json:"id"`
	InstanceID string     `json:"instance_id"`
	Text       string     `json:"question"`
	Choices    []string   `json:"choices"`
	Status     string     `json:"status"`
	AskedAt    time.Time  `json:"asked_at"`
	Answer     string     `json:"answer,omitempty"`
	AnsweredAt *time.Time `json:"answered_at,omitempty"`
}

// Question statuses.
const (
	QuestionOpen      = "open"
	QuestionAnswered  = "answered"
	QuestionExpired   = "expired"   // no answer came before the timeout
	QuestionCancelled = "cancelled" // the call was cancelled or the endpoint stopped
)

// Event is one progress event reported by report_progress.
type Event struct {
	Seq        int64     `json:"seq"`
	InstanceID string    `json:"instance_id"`
	At         time.Time `json:"at"`
	// Tool is the canonical name of the tool that recorded the event.
	Tool string `json:"tool"`
	// Status is as report_progress gave it: one of
	// mcpserver.ProgressStatuses, which the tool defines.
	Status  string   `json:"status"`
	Message string   `json:"message"`
	Percent *float64 `json:"percent,omitempty"`
}

// Redacted is a copy of the record for printing: see [mount.Mount.Redacted].
func (r *Record) Redacted() *Record {
	c := *r
	c.Mounts = make([]mount.Resolved, len(r.Mounts))
	for i, m := range r.Mounts {
		m.Mount = m.Mount.Redacted()
		c.Mounts[i] = m
	}
	return &c
}
