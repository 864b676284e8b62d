package provision

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
	"github.com/agentctl/agentctl/mcpserver/mount"
)

// CreateOptions are the inputs of [Create].
type CreateOptions struct {
	// Definition is the resolved agent definition; its capabilities are snapshotted.
	Definition *agents.Definition
	// Name is an optional label, unique among instances.
	Name string
	// Workspace is the directory the agent works in; it must exist.
	Workspace string
	// ServerName is the key S under which the endpoint is injected
	// (default [instance.DefaultServerName]).
	ServerName string
	// QuestionTimeout bounds how long ask_user_question waits (default
	// [mcpserver.DefaultQuestionTimeout]).
	QuestionTimeout time.Duration
	// Executable is the absolute path of the agentctl binary the client starts.
	Executable string
	// NoTrust leaves out "trust": true for clients that support it.
	NoTrust bool
	// AskVia overrides the definition's question policy
	// ([instance.CreateOptions.AskVia]); empty keeps it.
	AskVia agents.AskVia
	// PrefixMode is how mounts without an explicit prefix get one
	// (default [mount.PrefixModeMountName]).
	PrefixMode mount.PrefixMode
	// Mounts are the knowledge bases and external MCP servers, in order.
	Mounts []mount.Mount
	// Templates are instruction and skill files to expand for the
	// instance's tools.
	Templates []TemplateFile
	// Transport is how the client reaches the endpoint (see
	// [instance.CreateOptions.Transport]).
	Transport instance.Transport
}

// Opener opens the state store. [Create] calls it only once everything it
// can check without the store holds.
type Opener func(context.Context) (*instance.Store, error)

// Create provisions an instance: it checks the knowledge bases' folders and
// the external servers' relative commands (both made absolute against the
// current directory: see [CheckFolders] and [CheckCommands]) and the server
// name, plans the mounts' prefixes and the whole tool namespace,
// reads the templates, and only then opens the store (so a refused create
// leaves no state behind) and creates the record with its client
// configuration and expanded files, all or nothing. It returns the record and
// the plan it was made from, whose [Toolset.Announcements] the caller shows.
func Create(ctx context.Context, open Opener, o CreateOptions) (*instance.Record, Toolset, error) {
	if o.Definition == nil {
		return nil, Toolset{}, &instance.InvalidError{Msg: "no agent definition"}
	}
	if o.ServerName == "" {
		o.ServerName = instance.DefaultServerName
	}
	if o.PrefixMode == "" {
		o.PrefixMode = mount.PrefixModeMountName
	}
	if o.QuestionTimeout == 0 {
		o.QuestionTimeout = mcpserver.DefaultQuestionTimeout
	}
	mounts, err := CheckFolders(o.Mounts)
	if err != nil {
		return nil, Toolset{}, err
	}
	if mounts, err = CheckCommands(mounts, "", FromCreateDir); err != nil {
		return nil, Toolset{}, err
	}
	if err := instance.ValidateServerName(o.ServerName); err != nil {
		return nil, Toolset{}, err
	}
	plan, err := ResolveToolset(o.ServerName, o.Definition.Capabilities.ToolNames, o.PrefixMode, mounts)
	if err != nil {
		return nil, Toolset{}, err
	}
	templates, err := ReadTemplates(o.Templates)
	if err != nil {
		return nil, Toolset{}, err
	}
	st, err := open(ctx)
	if err != nil {
		return nil, Toolset{}, err
	}
	defer st.Close()
	rec, err := st.CreateInstance(ctx, instance.CreateOptions{
		Definition: o.Definition, Name: o.Name, Workspace: o.Workspace,
		ServerName: o.ServerName, QuestionTimeout: o.QuestionTimeout, Executable: o.Executable, NoTrust: o.NoTrust,
		AskVia: o.AskVia, ToolPrefixMode: string(o.PrefixMode), Mounts: plan.Mounts, Transport: o.Transport,
		Files: func(rec *instance.Record) (map[string][]byte, error) {
			return RenderFiles(rec, plan, templates)
		},
	})
	if err != nil {
		return nil, Toolset{}, st.Explain(err)
	}
	return rec, plan, nil
}

// CheckFolders returns mounts with each knowledge base's folder made
// absolute, and refuses a knowledge base without a path or whose path is not
// a directory. Other mounts are returned as they are.
func CheckFolders(mounts []mount.Mount) ([]mount.Mount, error) {
	out := append([]mount.Mount(nil), mounts...)
	for i, m := range out {
		if m.Kind != mount.KindKB {
			continue
		}
		if m.Path == "" {
			return nil, invalid(fmt.Errorf("knowledge base %q has no path", m.Name))
		}
		abs, err := filepath.Abs(m.Path)
		if err != nil {
			return nil, err
		}
		fi, err := os.Stat(abs)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, invalid(fmt.Errorf("knowledge base %q: %s does not exist; create it, or mount a folder that does", m.Name, abs))
		case err == nil && !fi.IsDir():
			return nil, invalid(fmt.Errorf("knowledge base %q: %s is not a directory; mount the folder of Markdown files", m.Name, abs))
		case err == nil:
			// Served by this user: a folder they may not read would stop
			// the endpoint at its start, built-in tools and all.
			var f *os.File
			if f, err = os.Open(abs); err == nil {
				_, err = f.ReadDir(1)
				f.Close()
				if errors.Is(err, io.EOF) {
					err = nil
				}
			}
		}
		if err != nil {
			return nil, invalid(fmt.Errorf("knowledge base %q: %s cannot be read (%v); the endpoint reads it as you: give yourself read access, or mount another folder", m.Name, abs, err))
		}
		out[i].Path = abs
	}
	return out, nil
}
