package provision

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentctl/agentctl/mcpserver/mount"
)

// FromCreateDir says, in [CheckCommands]'s errors, where relative commands
// of the mount flags are taken from.
const FromCreateDir = "the directory agentctl runs in"

// CheckCommands returns mounts with each stdio server's relative command
// ([mount.IsRelativeCommand]: ./ev.sh, bin/server) made absolute against
// dir ("" for the current directory, as for `instance create` and `instance
// mount add` flags; the config file's directory for its [[mcp_servers]]),
// so that the record names the same file wherever the client starts the
// endpoint. Such a command must then be an executable file: one that is
// not is refused with the mount's name, the path looked at, where relative
// paths are taken from (from describes dir) and how to fix it. Bare names
// (PATH lookups) and absolute commands are returned as they are (see
// [Toolset.Warnings] for those), and so are other mounts.
func CheckCommands(mounts []mount.Mount, dir, from string) ([]mount.Mount, error) {
	out := append([]mount.Mount(nil), mounts...)
	for i, m := range out {
		if m.Kind != mount.KindServer || !mount.IsRelativeCommand(m.Command) {
			continue
		}
		base, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("MCP server %q: make its command %q absolute: %w", m.Name, m.Command, err)
		}
		abs := filepath.Join(base, m.Command)
		if problem := notExecutable(abs); problem != "" {
			return nil, invalid(fmt.Errorf("MCP server %q: command %q is %s (a relative command is taken from %s, %s), which %s; give the path from there, or an absolute path",
				m.Name, m.Command, abs, from, base, problem))
		}
		out[i].Command = abs
	}
	return out, nil
}

// notExecutable says what keeps path from being started as a command, or ""
// if nothing does.
func notExecutable(path string) string {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "does not exist"
	case err != nil:
		return fmt.Sprintf("cannot be read (%v)", errors.Unwrap(err))
	case fi.IsDir():
		return "is a directory"
	case fi.Mode()&0o111 == 0:
		return "is not executable (chmod +x it)"
	}
	return ""
}
