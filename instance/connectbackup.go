package instance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/BurntSushi/toml"
)

// The backups connect and disconnect keep of a client file.

// BackupSuffix is appended to a file's name for the copy of it that
// [Connect] and [Disconnect] keep before agentctl first changes it. Before
// every change the file as it was is kept too, as FILE.agentctl-bak.1 (the
// newest) to FILE.agentctl-bak.5, older copies rotated out.
const BackupSuffix = ".agentctl-bak"

// BackupsKept is how many per-change backups (FILE.agentctl-bak.1 ...) are kept.
const BackupsKept = 5

func backupMode(data []byte, mode fs.FileMode) fs.FileMode {
	if tokenRE().Match(data) {
		return 0o600
	}
	return mode
}

// rotateBackups puts tmp (a copy of the file before this change) in place
// as real.agentctl-bak.1, moving older ones up to .BackupsKept, and keeps
// the first version agentctl changed as real.agentctl-bak (first is "" when
// there is none). A version that already holds an agentctl entry is not
// the file as it was before agentctl: agentctl made the file (there was
// none before), or its first backup was removed; it is kept as .1 only.
func rotateBackups(real, tmp string) (first, previous string) {
	name := real + BackupSuffix
	first, previous = name, name+".1"
	if _, err := os.Lstat(name); errors.Is(err, fs.ErrNotExist) {
		first = ""
		if data, err := os.ReadFile(tmp); err == nil && entryInstance(string(data)) == "" && !leftover(data) {
			first = name
			if os.Link(tmp, name) != nil {
				fi, err := os.Stat(tmp)
				if err != nil || writeAtomic(name, data, fi.Mode().Perm()) != nil {
					first = ""
				}
			}
		}
	}
	if prev, err := os.ReadFile(previous); err == nil {
		if data, err := os.ReadFile(tmp); err == nil && bytes.Equal(prev, data) {
			return first, previous // kept already (a change undone, then made again)
		}
	}
	for i := BackupsKept - 1; i >= 1; i-- {
		_ = os.Rename(name+"."+strconv.Itoa(i), name+"."+strconv.Itoa(i+1))
	}
	if err := os.Rename(tmp, previous); err != nil {
		return first, ""
	}
	return first, previous
}

// leftover reports whether data is what disconnect leaves of a file
// agentctl made: one member, an empty table of servers ({"mcpServers":
// {}}), which is not the user's file as it was before agentctl.
func leftover(data []byte) bool {
	var m map[string]any
	if json.Unmarshal(bytes.TrimPrefix(data, utf8BOM), &m) != nil {
		if _, err := toml.Decode(string(data), &m); err != nil {
			return false
		}
	}
	if len(m) != 1 {
		return false
	}
	for _, v := range m {
		switch t := v.(type) {
		case map[string]any:
			return len(t) == 0
		case []any:
			return len(t) == 0
		}
	}
	return false
}

// removedToken is what stands for a token disconnect took out of a backup:
// it keeps the backup's JSON, TOML or YAML valid, and is no token.
const removedToken = "<token removed by agentctl disconnect>"

// scrubBackups takes tokens out of the backups connect kept of the file at
// real: once the instance is disconnected they should not stay in the
// workspace (a `git add .` takes them). Each backup keeps its owner and
// mode. It returns the backups changed, and says of each it could not
// change why, and what to do.
func scrubBackups(real string, tokens []string) (changed, failed []string) {
	changed, failed = []string{}, []string{}
	if len(tokens) == 0 {
		return changed, failed
	}
	names := []string{real + BackupSuffix}
	for i := 1; i <= BackupsKept; i++ {
		names = append(names, real+BackupSuffix+"."+strconv.Itoa(i))
	}
	if _, err := os.Stat(filepath.Dir(real)); err != nil {
		return changed, failed // no folder, no backups
	}
	fail := func(name string, err error) {
		failed = append(failed, fmt.Sprintf("the instance's bearer token could not be taken out of %s (%v): remove that backup yourself, or run `agentctl instance token rotate` to make the token useless", name, err))
	}
	unlock, err := lockDir(filepath.Dir(real)) // connect rotates them under it
	if err != nil {
		fail(real+BackupSuffix+"*", err)
		return changed, failed
	}
	defer unlock()
	for _, name := range names {
		fi, err := os.Lstat(name)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(name)
		if err != nil {
			fail(name, err)
			continue
		}
		next := data
		for _, tok := range tokens {
			next = bytes.ReplaceAll(next, []byte(tok), []byte(removedToken))
		}
		if bytes.Equal(next, data) {
			continue
		}
		tmp, err := writeTemp(name, next, fi.Mode().Perm())
		if err == nil {
			keepOwner(tmp, fi)
			if err = os.Rename(tmp, name); err != nil {
				os.Remove(tmp)
			}
		}
		if err != nil {
			fail(name, err)
			continue
		}
		changed = append(changed, name)
	}
	return changed, failed
}
