package instance

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/agentctl/agentctl/agents"
)

// ForeignFilesError says that what a command needs of an instance's files
// is on the host that created it and cannot be made again here.
type ForeignFilesError struct {
	ID, Host string
	What     string // what cannot be made here, and why
}

func (e *ForeignFilesError) Error() string {
	return fmt.Sprintf("instance %s was created on host %s, which holds its files; %s: run this command on %s",
		e.ID, e.Host, e.What, e.Host)
}

// Unwrap makes it match [ErrInvalid]: the command was given an instance
// it cannot work with here.
func (e *ForeignFilesError) Unwrap() error { return ErrInvalid }

// RebuildFiles writes on this host the files of instance r, which another
// host created (see [Store.Foreign]), when they are not here yet: its
// client's MCP configuration, written as create writes it for def (r's
// agent definition), with this host's executable, and files, the model's
// files made again from the record. They are published together (a
// staging directory, then a rename), so a failure leaves nothing half
// made. An HTTP instance's configuration holds its token, which only the
// host that created it has: that is a [*ForeignFilesError].
func (s *Store) RebuildFiles(r *Record, def *agents.Definition, executable string, files map[string][]byte) error {
	if !s.Foreign(r) {
		return nil
	}
	if _, err := os.Stat(r.MCPConfigPath); err == nil {
		return nil // made here before
	}
	if r.Transport.Kind == TransportHTTP {
		return &ForeignFilesError{ID: r.ID, Host: r.Host,
			What: "its client configuration holds the instance's token, which only that host has (`agentctl instance token rotate` there prints a new one)"}
	}
	if err := os.MkdirAll(s.instancesDir(), 0o700); err != nil {
		return err
	}
	staging, err := os.MkdirTemp(s.instancesDir(), ".staging-"+r.ID+"-")
	if err != nil {
		return fmt.Errorf("instance %s: make its directory on this host: %w", r.ID, err)
	}
	defer os.RemoveAll(staging)
	entry := s.EndpointEntry(r, executable)
	entry.Trust = def.MCP.Trust && !r.NoTrust
	if r.QuestionTimeout > 0 {
		entry.ToolTimeout = ClientToolTimeout(def, time.Duration(r.QuestionTimeout))
	}
	// The file and its key are the record's: the definition may have
	// changed since, or differ on this host. The entry's shape is the
	// definition's (a record does not keep it).
	m := def.MCP
	if c := r.Client; c != nil {
		if agents.FileKind(c.File) != agents.FileKind(m.File) {
			return &ForeignFilesError{ID: r.ID, Host: r.Host,
				What: fmt.Sprintf("its client reads %s, but agent %q's definition here writes %s files (%s)", c.File, r.Agent, agents.FileKind(m.File), def.Source)}
		}
		m.File, m.Key = c.File, c.Key
	}
	if _, err := WriteClientConfig(staging, &m, r.ServerName, entry); err != nil {
		return fmt.Errorf("instance %s: write its %s MCP configuration: %w", r.ID, r.Agent, err)
	}
	if _, err := writeFiles(staging, files); err != nil {
		return err
	}
	// The directory may hold the serve lock of an endpoint that served the
	// instance here already, or what an earlier attempt made: the files
	// join it, one by one.
	if err := os.Rename(staging, r.Dir); err == nil {
		return nil
	}
	err = filepath.WalkDir(staging, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(staging, p)
		dst := filepath.Join(r.Dir, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return err
		}
		return os.Rename(p, dst)
	})
	if err != nil {
		return fmt.Errorf("instance %s: publish its files on this host: %w", r.ID, err)
	}
	return nil
}
