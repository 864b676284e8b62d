package instance

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/BurntSushi/toml"
)

// BackupSuffix is appended to a file's name for the copy of it that
// [Connect] and [Disconnect] keep before agentctl first changes it.
const BackupSuffix = ".agentctl-bak"

// editConfig reads the file at path as kind ("json", "toml" or "block"; nil
// when it does not exist or is empty), lets edit change it and writes the
// result back atomically with the file's mode, keeping a backup of the
// first version agentctl changed. edit returns nil to leave the file alone,
// or [removeFile] to remove it. A symbolic link is followed: the file it
// names is edited, the link kept.
func editConfig(path, kind string, edit func(doc any) (any, error), res *ConnectResult) error {
	real := path
	if r, err := filepath.EvalSymlinks(path); err == nil {
		real = r
	}
	// Two connects to one file at once (two instances in one workspace)
	// must not lose an entry: the read, the edit and the rename happen
	// under an exclusive lock on the file's directory (a file beside it
	// would be left in the user's workspace).
	unlock, err := lockDir(filepath.Dir(real))
	if err != nil {
		return err
	}
	defer unlock()
	data, err := os.ReadFile(real)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	var doc any
	if exists && len(bytes.TrimSpace(bytes.TrimPrefix(data, utf8BOM))) > 0 {
		switch kind {
		case "block":
			doc = data
		case "toml":
			var m map[string]any
			if _, err := toml.Decode(string(data), &m); err != nil {
				var pe toml.ParseError
				if errors.As(err, &pe) {
					return unreadable(path, fmt.Sprintf("line %d: %s", pe.Position.Line, pe.Message))
				}
				return unreadable(path, err.Error())
			}
			doc = m
		default:
			if doc, err = parseOrderedJSON(bytes.TrimPrefix(data, utf8BOM)); err != nil {
				return unreadable(path, err.Error())
			}
		}
	} else if exists && kind == "block" {
		doc = data
	}
	out, err := edit(doc)
	if err != nil || out == nil {
		return err
	}
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(real); err == nil {
		mode = fi.Mode().Perm()
	}
	var next []byte
	switch v := out.(type) {
	case removeFile:
	case []byte:
		next = v
	case map[string]any:
		var b bytes.Buffer
		if err := toml.NewEncoder(&b).Encode(v); err != nil {
			return fmt.Errorf("%s: %w; nothing was changed", path, err)
		}
		next = b.Bytes()
	default:
		if next, err = encodeOrderedJSON(v, jsonIndent(data)); err != nil {
			return fmt.Errorf("%s: %w; nothing was changed", path, err)
		}
		if bytes.HasPrefix(data, utf8BOM) { // as the file had it
			next = append(append([]byte{}, utf8BOM...), next...)
		}
	}
	if exists {
		bak := real + BackupSuffix
		if _, err := os.Stat(bak); errors.Is(err, fs.ErrNotExist) {
			if err := writeAtomic(bak, data, mode); err != nil {
				return fmt.Errorf("keep a backup of %s: %w; nothing was changed", path, err)
			}
		}
		res.Backup = bak
	}
	if _, ok := out.(removeFile); ok {
		return os.Remove(real)
	}
	if tokenRE().Match(next) {
		mode = 0o600 // it holds an instance's token
	}
	return writeAtomic(real, next, mode)
}

// utf8BOM is the byte order mark some Windows editors begin a UTF-8 file
// with; JSON does not allow it, but the clients that read these files skip
// it, so connect reads past it and keeps it.
var utf8BOM = []byte("\xef\xbb\xbf")

func unreadable(path, why string) error {
	return &InvalidError{Msg: fmt.Sprintf("%s does not parse (%s); nothing was changed: fix the file, or move it away, and try again", path, why)}
}

// writeAtomic writes data to path through a temporary file in the same
// directory and a rename, with mode.
func writeAtomic(path string, data []byte, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// lockDir takes an exclusive flock(2) lock on dir, creating it if needed,
// and returns its release. Where locks are not tracked it locks nothing.
func lockDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if !serveLocking {
		return func() {}, nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := lockFile(d, true, true); err != nil {
		d.Close()
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return func() { d.Close() }, nil
}
