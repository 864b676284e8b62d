package instance

import (
	"net/url"
	"strings"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/mcpserver/mount"
)

// Record is an instance as stored and as printed by `instance show -o json`.
// The JSON field names are part of the CLI contract: add fields, never rename.
type Record struct {
	// foreign says that the record, as read, is another host's, its paths
	// pointed at this host's directory for it ([Store.Foreign]).
	foreign bool

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
	// Dir is the instance's directory, holding the files written for its
	// client, on Host.
	Dir string `json:"dir"`
	// Host is the host whose state directory holds Dir (and the run logs,
	// locks and client files); "" in records made before hosts were kept.
	Host string `json:"host,omitempty"`
	// NoTrust: its client configuration leaves out "trust" (create
	// --no-trust), as another host that writes it again must.
	NoTrust bool `json:"no_trust,omitempty"`
	// QuestionTimeout is how long ask_user_question waits for an answer.
	QuestionTimeout Duration `json:"question_timeout"`
	// Files lists the files written into Dir for the client and the model
	// (the MCP configuration, instructions.md, skills), relative to Dir.
	Files []string `json:"files"`
	// Client is where the client reads the server (snapshotted); nil in
	// records made before it was kept.
	Client *ClientFiles `json:"client,omitempty"`
	// LastRun is the latest `agentctl instance run` of the instance, if any.
	LastRun *Run `json:"last_run,omitempty"`
	// Restarts say when `agentctl instance restart` last asked for each
	// external server (by mount name; [RestartAll] for all of them) to be
	// restarted: the endpoints serving the instance restart those whose
	// time changed. One time per server, so that requests in quick
	// succession are each carried out.
	Restarts map[string]time.Time `json:"restarts,omitempty"`

	// token is the bearer token, set only on the record
	// [Store.CreateInstance] returns: never stored, never marshalled.
	token string
}

// NewToken is the instance's bearer token on the record
// [Store.CreateInstance] returned, for showing once; "" on every other
// record (the store keeps only its hash).
func (r *Record) NewToken() string { return r.token }

// Transport says how the client reaches the endpoint.
type Transport struct {
	// Kind is [TransportStdio] or [TransportHTTP].
	Kind string `json:"kind"`
	// URL is where an HTTP instance's client connects (http only).
	URL string `json:"url,omitempty"`
}

// Transport kinds.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
)

// DefaultHTTPURL is an HTTP instance's URL unless --url says otherwise:
// the daemon's default listen address (`agentctl serve`) and the
// instance's path; {id} is the instance id.
const DefaultHTTPURL = "http://127.0.0.1:7821/instances/{id}/mcp"

// checkTransport fills in t's defaults and refuses what is not a
// transport.
func checkTransport(t Transport) (Transport, error) {
	switch t.Kind {
	case "", TransportStdio:
		if t.URL != "" {
			return t, invalidf("a URL (%s) is for --transport http; drop --url or add --transport http", t.URL)
		}
		return Transport{Kind: TransportStdio}, nil
	case TransportHTTP:
		if t.URL == "" {
			t.URL = DefaultHTTPURL
		}
		u, err := url.Parse(strings.ReplaceAll(t.URL, "{id}", "id"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return t, invalidf("URL %q is not an http:// or https:// URL with a host; for example %s", t.URL, DefaultHTTPURL)
		}
		return t, nil
	}
	return t, invalidf("unknown transport %q; use stdio (the client starts the endpoint) or http (the client connects to `agentctl serve`)", t.Kind)
}

// expandURL puts the instance id in place of {id} in u.
func expandURL(u, id string) string { return strings.ReplaceAll(u, "{id}", id) }

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
	// Status is one of [ProgressStatuses] as report_progress gave it, or
	// [StatusUnanswered].
	Status  string   `json:"status"`
	Message string   `json:"message"`
	Percent *float64 `json:"percent,omitempty"`
	// RunID is the id of the `agentctl instance run` under way when the
	// event was recorded (its start and end included); "" outside a run.
	RunID string `json:"run_id,omitempty"`
}

// RestartAll is the key of [Record.Restarts] that asks for every external
// server.
const RestartAll = "*"

// Redacted is a copy of the record for printing: see [mount.Mount.Redacted].
func (r *Record) Redacted() *Record {
	c := *r
	c.Mounts = make([]mount.Resolved, len(r.Mounts))
	for i, m := range r.Mounts {
		m.Mount = m.Mount.Redacted()
		c.Mounts[i] = m
	}
	// The client's URL may hold a password (--url http://u:PW@h/...); its
	// path is the instance's own.
	if u, err := url.Parse(c.Transport.URL); err == nil && u.User != nil {
		u.User = url.User("redacted")
		c.Transport.URL = u.String()
	}
	return &c
}
