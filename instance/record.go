package instance

import (
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/agentctl/agentctl/agents"
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
	ConfigFormat   string    `json:"config_format"`
	Workspace      string    `json:"workspace"`
	ToolPrefixMode string    `json:"tool_prefix_mode"`
	Mounts         []Mount   `json:"mounts"`
	Transport      Transport `json:"transport"`
	MCPConfigPath  string    `json:"mcp_config_path"`
	// Dir is the instance's directory, holding the files written for its client.
	Dir string `json:"dir"`
	// QuestionTimeout is how long ask_user_question waits for an answer.
	QuestionTimeout Duration `json:"question_timeout"`
	// Files lists the files written into Dir for the client and the model
	// (the MCP configuration, instructions.md, skills), relative to Dir.
	Files []string `json:"files"`
}

// Mount is a knowledge base or an external MCP server mounted into the instance.
type Mount struct {
	Kind            string `json:"kind"`
	Name            string `json:"name"`
	Path            string `json:"path,omitempty"`
	ToolPrefix      string `json:"tool_prefix"`
	EffectivePrefix string `json:"effective_prefix"`
	PrefixOrigin    string `json:"prefix_origin"`
	ReadOnly        bool   `json:"read_only"`
	// MaxBytes bounds a knowledge base's concepts; 0 means the default (1 MiB).
	MaxBytes int64 `json:"max_bytes,omitempty"`

	// An external MCP server (kind "mcp"): a command over stdio, or a URL
	// for streamable HTTP with its headers.
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Timeout bounds connecting to and listing an external server (default 10s).
	Timeout Duration `json:"timeout,omitempty"`
}

// Transport says how the client reaches the endpoint.
type Transport struct {
	Kind string `json:"kind"`
}

// Duration is a time.Duration that reads and writes as "10m0s" in JSON.
type Duration time.Duration

// MarshalJSON writes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"10m\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

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
	QuestionOpen     = "open"
	QuestionAnswered = "answered"
	QuestionExpired  = "expired"   // no answer came before the timeout
	QuestionAborted  = "cancelled" // the call was cancelled or the endpoint stopped
)

// Event is one progress event reported by report_progress.
type Event struct {
	Seq        int64     `json:"seq"`
	InstanceID string    `json:"instance_id"`
	At         time.Time `json:"at"`
	// Tool is the canonical name of the tool that recorded the event.
	Tool    string   `json:"tool"`
	Status  string   `json:"status"`
	Message string   `json:"message"`
	Percent *float64 `json:"percent,omitempty"`
}

// Event statuses.
const (
	StatusRunning = "running"
	StatusBlocked = "blocked"
	StatusDone    = "done"
	StatusFailed  = "failed"
)

// Statuses lists the valid event statuses.
var Statuses = []string{StatusRunning, StatusBlocked, StatusDone, StatusFailed}

// Redacted is a copy of the record for printing: the values of external
// servers' environment variables and headers, which often hold secrets, are
// replaced by "<redacted>", and a URL's user information and query are hidden.
func (r *Record) Redacted() *Record {
	c := *r
	c.Mounts = make([]Mount, len(r.Mounts))
	hide := func(m map[string]string) map[string]string {
		if len(m) == 0 {
			return m
		}
		out := make(map[string]string, len(m))
		for k := range m {
			out[k] = "<redacted>"
		}
		return out
	}
	for i, m := range r.Mounts {
		m.Env, m.Headers = hide(m.Env), hide(m.Headers)
		if u, err := url.Parse(m.URL); err == nil && (u.User != nil || u.RawQuery != "") {
			if u.User != nil {
				u.User = url.User("redacted")
			}
			if u.RawQuery != "" {
				u.RawQuery = "redacted"
			}
			m.URL = u.String()
		}
		c.Mounts[i] = m
	}
	return &c
}
