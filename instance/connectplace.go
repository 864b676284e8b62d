package instance

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Putting a client file's new version in place, or removing it, so that no
// other program's change is lost (see [editConfig]).

// replaceChecked puts tmp in place at real. When what it replaced is not
// f, the file read (another program renamed its own version over it after
// the check), that version is put back at once, before anyone reads
// agentctl's version made from an older one, and again says to make the
// edit again on it. again says so too when real was created since it was
// read not to exist (nothing is replaced then).
func replaceChecked(tmp, real string, f *os.File, exists bool) (again bool, err error) {
	if !exists {
		ok, err := renameNoReplace(tmp, real)
		if errors.Is(err, fs.ErrExist) {
			return true, nil
		}
		if ok || err != nil {
			return false, err
		}
		return false, os.Rename(tmp, real)
	}
	expect, err := os.Stat(tmp) // agentctl's version
	if err != nil {
		return false, err
	}
	if ok, err := exchangeFiles(tmp, real); !ok || err != nil {
		if err == nil {
			err = os.Rename(tmp, real)
		}
		return false, err
	}
	if f == nil || sameFile(f, tmp) {
		return false, nil
	}
	// Swap back; should yet another version have been renamed over
	// agentctl's meanwhile, that one is swapped back in turn.
	for range 4 {
		displaced, err := os.Stat(tmp)
		if err != nil {
			return false, err
		}
		if _, err := exchangeFiles(tmp, real); err != nil {
			return false, err
		}
		if now, err := os.Stat(tmp); err == nil && os.SameFile(now, expect) {
			return true, nil
		}
		expect = displaced
	}
	_, kept := rotateBackups(real, tmp)
	return false, &fileConflictError{Msg: fmt.Sprintf("%s kept being replaced while agentctl edited it; nothing of agentctl's is in it, and the version before the last is kept as %s", real, kept)}
}

// writeInPlace writes next into the file at real, which f read as was,
// instead of renaming a new version over it, so that the file keeps its
// owner and its other names. It is not atomic: the room for next is
// reserved first, and a write that fails all the same is undone. again
// says the file changed since it was read (written into, or replaced):
// the edit is made again on what is there. A private version (holding a
// token) makes a file that others may read private first, which needs
// its owner; its mode is put back if the write fails.
func writeInPlace(path, real string, f *os.File, was, next []byte, private bool) (again bool, err error) {
	w, err := os.OpenFile(real, os.O_WRONLY, 0)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return false, invalidf("%s cannot be changed: agentctl may not write into it (%v); nothing was changed: run as the user who owns the file, or give yours write access to it", path, err)
		}
		return false, err
	}
	defer w.Close()
	if connectHook != nil {
		connectHook("in-place", real)
	}
	// Still the file read, and still as it was read: an editor writes
	// these files in place too.
	changed := func() bool {
		if f == nil {
			return false
		}
		now, err := readAllAt(f)
		return err != nil || !bytes.Equal(now, was) || !sameFile(f, real) || !sameOpen(f, w)
	}
	if changed() {
		return true, nil
	}
	if err := reserve(w, int64(len(next))); err != nil {
		return false, fmt.Errorf("%s: no room for its new version (%w); nothing was changed", path, err)
	}
	fi, err := w.Stat()
	if err != nil {
		return false, err
	}
	if private && fi.Mode().Perm()&0o077 != 0 {
		if err := w.Chmod(0o600); err != nil {
			return false, invalidf("%s would hold the instance's bearer token, but others may read it and agentctl, not its owner, may not change that (%v); nothing was changed: "+
				"run as its owner, or connect with --scope user", path, err)
		}
	}
	_, err = w.WriteAt(next, 0)
	if err == nil {
		err = w.Truncate(int64(len(next)))
	}
	if err == nil {
		err = w.Sync()
	}
	if err != nil {
		_ = w.Chmod(fi.Mode().Perm())
		if _, perr := w.WriteAt(was, 0); perr == nil && w.Truncate(int64(len(was))) == nil {
			return false, fmt.Errorf("%s could not be written (%w); it was put back as it was", path, err)
		}
		return false, fmt.Errorf("%s could not be written, nor put back as it was (%w)", path, err)
	}
	if connectHook != nil {
		connectHook("written in place", real)
	}
	if !sameFile(w, real) {
		// Renamed over meanwhile: the version written went into the file
		// replaced. Edit the new one.
		return true, nil
	}
	return false, nil
}

// sameOpen reports whether a and b are open on the same file.
func sameOpen(a, b *os.File) bool {
	ai, err1 := a.Stat()
	bi, err2 := b.Stat()
	return err1 == nil && err2 == nil && os.SameFile(ai, bi)
}

// removeChecked removes the file at real, f as read. When the file removed
// is not f (another program renamed its own version over it after the
// check), it is put back, and again says to make the edit again on it.
func removeChecked(real string, f *os.File) (again bool, err error) {
	if f == nil {
		return false, os.Remove(real)
	}
	aside, err := writeTemp(real, nil, 0o600)
	if err != nil {
		return false, err
	}
	if err := os.Rename(real, aside); err != nil {
		os.Remove(aside)
		return false, err
	}
	if sameFile(f, aside) {
		return false, os.Remove(aside)
	}
	ok, err := renameNoReplace(aside, real)
	if !ok && err == nil {
		if _, serr := os.Lstat(real); errors.Is(serr, fs.ErrNotExist) {
			err = os.Rename(aside, real)
		} else {
			err = fs.ErrExist
		}
	}
	if err != nil {
		return false, &fileConflictError{Msg: fmt.Sprintf("%s was replaced while agentctl removed it, and could not be put back (%v); the version written is kept as %s", real, err, aside)}
	}
	return true, nil
}
