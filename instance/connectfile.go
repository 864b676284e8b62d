package instance

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// casAttempts bounds how often an edit is tried again when the file
// changed between its read and the rename that replaces it.
const casAttempts = 25

// fileEdit is what an edit makes of a client file: its new bytes, or its
// removal. A nil *fileEdit leaves the file alone.
type fileEdit struct {
	next   []byte
	remove bool
}

// editConfig lets edit turn the bytes of the file at path (data; exists
// false when there is none) into its next version, and puts that in place
// so that no one else's change to the file is lost:
//
//   - an exclusive flock(2) on the file's directory (agentctl against
//     agentctl, also while the file does not exist yet) and on the file
//     itself (any program that locks the file it edits), held from the read
//     to the rename;
//   - a compare-and-swap on content for programs that take no lock (an
//     editor): just before the new version (a temporary file in the same
//     directory, with the file's mode) is renamed over the file, the file is
//     read again, and when it is no longer what edit saw, the edit is made
//     again on what is there now (at most casAttempts times, then an error
//     that says the file keeps changing). Bytes written in place into the
//     old file between that read and the rename are found in it afterwards
//     and edited again too.
//
// Before each change the file as it was is kept as FILE.agentctl-bak.1
// (older copies rotated to .2 ... .BackupsKept), and the first version
// agentctl changed as FILE.agentctl-bak; without room for that, nothing
// changes. A symbolic link is followed: the file it names is edited, the
// link kept. A file whose new version could not have its owner, or that
// has other names (hard links), is written into instead ([writeInPlace]).
func editConfig(path string, res *ConnectResult, edit func(data []byte, exists bool) (*fileEdit, error)) error {
	real := resolveLink(path)
	if err := checkEditable(path, real); err != nil {
		return err
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		res.Target = real // the link's own folder may lead elsewhere too; that is no news
	}
	// A lock file beside the client's file would be left in the user's
	// workspace: the directory itself is locked.
	unlock, err := lockDir(filepath.Dir(real))
	if err != nil {
		return notWritable(path, real, err)
	}
	defer unlock()

	var orphan *os.File // the replaced file, when someone wrote into it late
	defer func() {
		if orphan != nil {
			orphan.Close()
		}
	}()
	var placed []byte // what agentctl last put at real
	// An attempt that found a late write has put its own version in
	// place already: it is always followed by one more.
	for attempt := 0; attempt < casAttempts || orphan != nil && attempt < casAttempts+3; attempt++ {
		if attempt > 0 && orphan == nil {
			time.Sleep(time.Duration(attempt) * 2 * time.Millisecond)
		}
		f, data, exists, err := openLocked(real)
		if err != nil {
			return err
		}
		done, err := func() (bool, error) {
			defer func() {
				if f != nil {
					f.Close()
				}
			}()
			base, baseExists := data, exists
			if orphan != nil {
				if exists && bytes.Equal(data, placed) {
					// Edit what was written into the file agentctl
					// replaced, once its writer is done.
					// Most writers write a small file in one go: what
					// is there now is what was written, unless it is
					// empty (truncated, not written yet) or does not
					// parse (half written), when it is read again until
					// it stops changing.
					read := func() ([]byte, error) { return readAllAt(orphan) }
					if base, err = read(); err != nil {
						return false, err
					}
					if _, perr := edit(base, true); perr != nil || len(bytes.TrimSpace(base)) == 0 {
						if base, err = stableRead(read); err != nil {
							return false, err
						}
					}
					baseExists = true
				}
				orphan.Close()
				orphan = nil
			} else if exists && len(bytes.TrimSpace(data)) == 0 {
				// Empty: maybe truncated by a writer about to write it.
				now, err := stableRead(func() ([]byte, error) { b, _, err := readFile(real); return b, err })
				if err != nil || !bytes.Equal(now, data) {
					return false, err
				}
			}
			fe, err := edit(base, baseExists)
			if err != nil {
				// A file being written (truncated, half written) does not
				// parse for a moment: only a file that stays as it is is
				// refused.
				time.Sleep(20 * time.Millisecond)
				if now, nowExists, rerr := readFile(real); rerr == nil && (nowExists != exists || !bytes.Equal(now, data)) {
					return false, nil
				}
				return true, err
			}
			if fe == nil {
				return true, nil
			}
			if connectHook != nil {
				connectHook("edited", real)
			}
			mode := newFileMode() // a file agentctl makes: as the umask gives
			fi, ferr := os.Stat(real)
			if ferr == nil {
				mode = fi.Mode().Perm()
			}
			var tmp string
			inPlace := false
			if !fe.remove {
				if tokenRE().Match(fe.next) {
					mode = 0o600 // it holds an instance's token
				}
				if tmp, err = writeTemp(real, fe.next, mode); err != nil {
					return true, notWritable(path, real, err)
				}
				defer os.Remove(tmp)
				// Renamed over the file, a new version would have another
				// owner than the file's (only root may give a file away),
				// or leave the file's other names (hard links) behind:
				// the new bytes are written into the file instead, as an
				// editor does then.
				if inPlace = ferr == nil && (!keepOwner(tmp, fi) || hardLinked(fi)); inPlace {
					os.Remove(tmp) // its room is the file's
				}
			}
			// The file as it is is kept before anything changes: with no
			// room for it, nothing does.
			var bak string
			if baseExists {
				if bak, err = writeTemp(real+BackupSuffix, base, backupMode(base, mode)); err != nil {
					if errors.Is(err, fs.ErrPermission) {
						return true, notWritable(path, real, err)
					}
					return true, fmt.Errorf("%s: its backup could not be written beside it (%w); nothing was changed", path, err)
				}
				defer os.Remove(bak)
			}
			// The compare-and-swap: the file must still be what was read.
			now, nowExists, err := readFile(real)
			if err != nil {
				return true, err
			}
			if nowExists != exists || !bytes.Equal(now, data) {
				return false, nil
			}
			if f != nil && !sameFile(f, real) {
				return false, nil // replaced (renamed over) since the read just now
			}
			if connectHook != nil {
				connectHook("checked", real)
			}
			// A program that saves by renaming a file of its own over this
			// one could do so between the check and the replace: what was
			// at real is found afterwards (swapped out, on Linux), and when
			// it is not the file read, it is put back and edited again.
			var again bool
			switch {
			case fe.remove:
				again, err = removeChecked(real, f)
			case inPlace:
				// Not atomic: the backup is in place, named, first.
				res.Backup, res.Previous = rotateBackups(real, bak)
				bak = ""
				again, err = writeInPlace(path, real, f, data, fe.next, mode == 0o600)
				if err != nil {
					err = fmt.Errorf("%w; the file as it was is kept as %s", err, cmp.Or(res.Previous, "(no backup could be kept)"))
				}
			default:
				again, err = replaceChecked(tmp, real, f, exists)
			}
			if err != nil || again {
				return !again, err
			}
			if bak != "" {
				res.Backup, res.Previous = rotateBackups(real, bak)
			}
			if inPlace {
				return true, nil // f is the file, and holds agentctl's version
			}
			if f != nil {
				// Bytes written into the old file after the read above
				// would be lost with it: edit them again.
				if late, err := readAllAt(f); err == nil && !bytes.Equal(late, data) {
					if fe.remove {
						// Put the version written back, and remove nothing.
						late, _ = stableRead(func() ([]byte, error) { return readAllAt(f) })
						if err := writeAtomic(real, late, mode); err != nil {
							return true, fmt.Errorf("%s was written to while agentctl removed it, and could not be put back (%w); it is kept as %s", path, err, res.Previous)
						}
						return true, &fileConflictError{Msg: fmt.Sprintf("%s was written to while agentctl removed it; the version written was put back and nothing removed: try again", path)}
					}
					orphan, placed = f, fe.next
					f = nil // kept open, for the next attempt
					return false, nil
				}
			}
			return true, nil
		}()
		if done || err != nil {
			return err
		}
	}
	if orphan != nil {
		// Keep what the other program wrote where the user finds it.
		if late, err := readAllAt(orphan); err == nil {
			if tmp, err := writeTemp(real+BackupSuffix, late, 0o600); err == nil {
				res.Backup, res.Previous = rotateBackups(real, tmp)
			}
		}
		return &fileConflictError{Msg: fmt.Sprintf("%s kept changing while agentctl edited it; agentctl's edit is in place, but a version another program wrote at the same moment is not in it: it is kept as %s", path, res.Previous)}
	}
	return &fileConflictError{Msg: fmt.Sprintf("%s kept changing while agentctl edited it (%d attempts); nothing was changed: "+
		"close the program writing it (an editor with unsaved changes, another agentctl), and try again", path, casAttempts)}
}

// resolveLink is the file path names: where path is a symbolic link, the
// file it leads to, there or not yet (then it is made, the link kept).
func resolveLink(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	if t, ok := danglingLink(path); ok {
		return t
	}
	return path
}

// danglingLink is the file a symbolic link at path names when that file
// is not there yet (following links to links); false when path is no
// such link.
func danglingLink(path string) (string, bool) {
	p := path
	for range 40 {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return p, p != path
		}
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return "", false
		}
		t, err := os.Readlink(p)
		if err != nil {
			return "", false
		}
		if !filepath.IsAbs(t) {
			// Relative to the link's folder as the system finds it:
			// through that folder's own links, not by its name.
			dir := filepath.Dir(p)
			if r, err := filepath.EvalSymlinks(dir); err == nil {
				dir = r
			}
			t = filepath.Join(dir, t)
		}
		p = t
	}
	return "", false
}

// checkEditable refuses a client file (path, real once links are
// followed) that agentctl should not replace: a directory or anything else
// that is not a plain file (a device, a pipe: a checkout may link the path
// to one, which would be read without end or block the edit), or a file
// its owner made read-only or the user may not write. Root may write any
// file, but a read-only one says its owner wants it left alone.
func checkEditable(path, real string) error {
	fi, err := os.Stat(real)
	if err != nil {
		return nil // not there: made
	}
	switch {
	case fi.IsDir():
		return invalidf("%s is a directory, not a client's file; nothing was changed: move it away, or fix the path in the client's definition", path)
	case !fi.Mode().IsRegular():
		return invalidf("%s is not a plain file (%s is a %v); nothing was changed: replace it with the client's file, or remove it for agentctl to make one", path, real, fi.Mode().Type())
	case fi.Mode().Perm()&0o222 == 0:
		return invalidf("%s is read-only (mode %v); nothing was changed: make it writable (chmod u+w %s) for agentctl to edit it", path, fi.Mode().Perm(), path)
	}
	f, err := os.OpenFile(real, os.O_WRONLY, 0)
	if err != nil {
		return notWritable(path, real, err)
	}
	f.Close()
	return nil
}

// notWritable is err, said for a client file agentctl may not write (or
// write beside, as it must to replace it whole) when err is a refused
// permission.
func notWritable(path, real string, err error) error {
	if !errors.Is(err, fs.ErrPermission) {
		return err
	}
	return invalidf("%s cannot be changed: agentctl writes its new version beside it, in %s, and renames it over the file, and may not (%v); nothing was changed: "+
		"run as the user who owns the file, or give yours write access to the file and its directory", path, filepath.Dir(real), err)
}

// connectHook, when set (by tests), is called with the file's path after
// an edit was made ("edited") and after the compare-and-swap found the file
// unchanged, just before the rename ("checked"); for a file written in
// place, after it is opened to be written ("in-place") and once written
// ("written in place").
var connectHook func(stage, path string)

// fileConflictError is a client file that another program holds or keeps
// changing (exit code 4, as for other conflicts).
type fileConflictError struct{ Msg string }

func (e *fileConflictError) Error() string { return e.Msg }
func (e *fileConflictError) Unwrap() error { return ErrConflict }

// openLocked opens the file at path and takes an exclusive flock(2) on it
// (waiting up to connectLockWait for another program's), making sure it
// is still the file at path, and reads it; f is nil when there is no file.
func openLocked(path string) (f *os.File, data []byte, exists bool, err error) {
	for {
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, false, nil
		}
		if err != nil {
			return nil, nil, false, err
		}
		if serveLocking {
			if err := lockWaiting(f, path); err != nil {
				return nil, nil, false, err // f closed
			}
		}
		if sameFile(f, path) {
			data, err := io.ReadAll(f)
			if err != nil || !serveLocking {
				// Without locks (Windows), an open file could not be
				// renamed over.
				f.Close()
				return nil, data, err == nil, err
			}
			return f, data, true, nil
		}
		// Replaced while we waited for its lock: lock the new one.
		f.Close()
	}
}

// stableRead reads with read until two reads 2ms apart agree (at most
// about 50ms): a file being written is read once its writer is done.
func stableRead(read func() ([]byte, error)) ([]byte, error) {
	prev, err := read()
	for range 25 {
		if err != nil {
			return nil, err
		}
		time.Sleep(2 * time.Millisecond)
		var cur []byte
		if cur, err = read(); err == nil && bytes.Equal(cur, prev) {
			return cur, nil
		}
		prev = cur
	}
	return prev, err
}

// sameFile reports whether f is still the file at path.
func sameFile(f *os.File, path string) bool {
	fi, err1 := f.Stat()
	cur, err2 := os.Stat(path)
	return err1 == nil && err2 == nil && os.SameFile(fi, cur)
}

func readFile(path string) ([]byte, bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	return data, err == nil, err
}

// readAllAt reads f from its start.
func readAllAt(f *os.File) ([]byte, error) {
	return io.ReadAll(io.NewSectionReader(f, 0, 1<<40))
}

// utf8BOM is the byte order mark some Windows editors begin a UTF-8 file
// with; JSON does not allow it, but the clients that read these files skip
// it, so connect reads past it and keeps it.
var utf8BOM = []byte("\xef\xbb\xbf")

func unreadable(path, why string) error {
	return &InvalidError{Msg: fmt.Sprintf("%s does not parse (%s); nothing was changed: fix the file, or move it away, and try again", path, why)}
}

// writeTemp writes data to a new temporary file beside path, with mode,
// synced, and returns its name.
func writeTemp(path string, data []byte, mode fs.FileMode) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-")
	if err != nil {
		return "", err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), mode)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), nil
}

// writeAtomic writes data to path through a temporary file in the same
// directory and a rename, with mode.
func writeAtomic(path string, data []byte, mode fs.FileMode) error {
	tmp, err := writeTemp(path, data, mode)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
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
	if err := lockWaiting(d, dir); err != nil {
		return nil, err // d closed
	}
	return func() { d.Close() }, nil
}

// connectLockWait bounds the wait for another program's lock on a client's
// file or its folder. agentctl holds them for milliseconds; a program that
// holds one longer (an editor, a stopped process) would otherwise keep
// connect waiting without a word, past Ctrl-C.
var connectLockWait = 10 * time.Second

// lockWaiting takes an exclusive flock(2) lock on f, opened at path,
// waiting up to connectLockWait. The wait is the system's (a program that
// locks again at once does not starve it), in a goroutine that is left to
// it when the time is up. On an error f is closed: at once, or when that
// goroutine gets the lock after all, which closing it lets go.
func lockWaiting(f *os.File, path string) error {
	if err := lockFile(f, true, false); err == nil {
		return nil // free, as it nearly always is
	}
	got := make(chan error, 1)
	go func() { got <- lockFile(f, true, true) }()
	timer := time.NewTimer(connectLockWait)
	defer timer.Stop()
	select {
	case err := <-got:
		if err != nil {
			f.Close()
			return fmt.Errorf("lock %s: %w", path, err)
		}
		return nil
	case <-timer.C:
		go func() {
			<-got
			f.Close()
		}()
		return &fileConflictError{Msg: fmt.Sprintf("%s is locked by another program (an editor, another agentctl) and was for %s; nothing was changed: close that program, or let it finish, and try again", path, connectLockWait)}
	}
}
