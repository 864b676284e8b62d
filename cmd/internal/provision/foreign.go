package provision

import (
	"path/filepath"
	"strings"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/instance"
)

// Rebuild makes on this host the files of instance rec, which another
// host sharing the store created, when they are not here yet (see
// [instance.Store.RebuildFiles]): its client's configuration for def, and
// instructions.md from the record's tools. Templates that the instance was
// created with live in that host's files only: an instance made with
// them is a [*instance.ForeignFilesError].
func Rebuild(st *instance.Store, rec *instance.Record, def *agents.Definition, executable string) error {
	if !st.Foreign(rec) {
		return nil
	}
	for _, f := range rec.Files {
		if strings.HasPrefix(f, TemplatesDir+string(filepath.Separator)) {
			return &instance.ForeignFilesError{ID: rec.ID, Host: rec.Host,
				What: "its instructions and skills come from templates (" + f + ") kept in its files"}
		}
	}
	plan, err := RecordToolset(rec)
	if err != nil {
		return err
	}
	files, err := RenderFiles(rec, plan, nil)
	if err != nil {
		return err
	}
	return st.RebuildFiles(rec, def, executable, files)
}
