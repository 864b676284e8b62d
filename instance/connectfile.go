package instance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/BurntSushi/toml"
)

// BackupSuffix is appended to a file's name for the copy of it that
// [Connect] and [Disconnect] keep before agentctl first changes it. Before
// every change the file as it was is kept too, as FILE.agentctl-bak.1 (the
// newest) to FILE.agentctl-bak.5, older copies rotated out.
const BackupSuffix = ".agentctl-bak"

// BackupsKept is how many per-change backups (FILE.agentctl-bak.1 ...) are kept.
const BackupsKept = 5

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
// agentctl changed as FILE.agentctl-bak. A symbolic link is followed: the
// file it names is edited, the link kept.
func editConfig(path string, res *ConnectResult, edit func(data []byte, exists bool) (*fileEdit, error)) error {
	real := path
	if r, err := filepath.EvalSymlinks(path); err == nil {
		real = r
	}
	// A lock file beside the client's file would be left in the user's
	// workspace: the directory itself is locked.
	unlock, err := lockDir(filepath.Dir(real))
	if err != nil {
		return err
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
			mode := fs.FileMode(0o644)
			if fi, err := os.Stat(real); err == nil {
				mode = fi.Mode().Perm()
			}
			var tmp string
			if !fe.remove {
				if tokenRE().Match(fe.next) {
					mode = 0o600 // it holds an instance's token
				}
				if tmp, err = writeTemp(real, fe.next, mode); err != nil {
					return true, err
				}
				defer os.Remove(tmp)
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
			if fe.remove {
				again, err := removeChecked(real, f)
				if err != nil || again {
					return !again, err
				}
			} else {
				again, err := replaceChecked(tmp, real, f, exists)
				if err != nil || again {
					return !again, err
				}
			}
			if baseExists {
				// Written after the rename, to keep the time between the
				// check and the rename short.
				bak, err := writeTemp(real+BackupSuffix, base, backupMode(base, mode))
				if err != nil {
					return true, fmt.Errorf("%s was changed, but its backup could not be written: %w", path, err)
				}
				res.Backup, res.Previous = rotateBackups(real, bak)
				os.Remove(bak)
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

// connectHook, when set (by tests), is called with the file's path after
// an edit was made ("edited") and after the compare-and-swap found the file
// unchanged, just before the rename ("checked").
var connectHook func(stage, path string)

// fileConflictError is a client file that another program holds or keeps
// changing (exit code 4, as for other conflicts).
type fileConflictError struct{ Msg string }

func (e *fileConflictError) Error() string { return e.Msg }
func (e *fileConflictError) Unwrap() error { return ErrConflict }

// openLocked opens the file at path and takes an exclusive flock(2) on it
// (waiting for another program's), making sure it is still
// the file at path, and reads it; f is nil when there is no file.
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
			if err := lockFile(f, true, true); err != nil {
				f.Close()
				return nil, nil, false, fmt.Errorf("lock %s: %w", path, err)
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

func backupMode(data []byte, mode fs.FileMode) fs.FileMode {
	if tokenRE().Match(data) {
		return 0o600
	}
	return mode
}

// rotateBackups puts tmp (a copy of the file before this change) in place
// as real.agentctl-bak.1, moving older ones up to .BackupsKept, and keeps
// the first version agentctl changed as real.agentctl-bak.
func rotateBackups(real, tmp string) (first, previous string) {
	first = real + BackupSuffix
	previous = first + ".1"
	if _, err := os.Lstat(first); errors.Is(err, fs.ErrNotExist) {
		if os.Link(tmp, first) != nil {
			if data, err := os.ReadFile(tmp); err == nil {
				if fi, err := os.Stat(tmp); err == nil {
					_ = writeAtomic(first, data, fi.Mode().Perm())
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
		_ = os.Rename(first+"."+strconv.Itoa(i), first+"."+strconv.Itoa(i+1))
	}
	if err := os.Rename(tmp, previous); err != nil {
		return first, ""
	}
	return first, previous
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
	if err := lockFile(d, true, true); err != nil {
		d.Close()
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return func() { d.Close() }, nil
}

// JSON, edited in place.
//
// A client's JSON file is never decoded and encoded again as a whole: it is
// scanned for the byte ranges of its values, and only the range of the one
// entry agentctl adds, replaces or removes is changed. Everything else stays
// byte for byte: formatting, numbers as written (1e400,
// 12345678901234567890), escapes (a lone "\ud800"), even invalid UTF-8.

// jsonSpan is a JSON value's bytes, [start, end).
type jsonSpan struct {
	start, end int
	kind       byte // '{', '[', '"', or 0 for a literal or number
	members    []jsonMember
}

// jsonMember is an object's member: its name (decoded), where its quoted
// name starts, and its value.
type jsonMember struct {
	name     string
	keyStart int
	val      *jsonSpan
}

func (s *jsonSpan) member(name string) (int, *jsonMember) {
	for i := range s.members {
		if s.members[i].name == name {
			return i, &s.members[i]
		}
	}
	return -1, nil
}

// scanJSON checks that data is one JSON value, with no member name twice in
// one object, and returns its spans. Errors name the line and column.
func scanJSON(data []byte) (*jsonSpan, error) {
	// encoding/json's check gives the offset of a syntax error; a
	// RawMessage converts no number (1e400 is valid JSON).
	var raw json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := lineCol(data, se.Offset)
			msg := se.Error()
			if hasJSONComment(data) {
				msg += "; the file has comments (JSON with comments), which agentctl does not edit"
			}
			return nil, fmt.Errorf("line %d, column %d: %s", line, col, msg)
		}
		return nil, err
	}
	sc := jsonScanner{data: data}
	sc.ws()
	return sc.value()
}

// jsonScanner reads spans from JSON already known to be valid.
type jsonScanner struct {
	data []byte
	pos  int
}

func (sc *jsonScanner) ws() {
	for sc.pos < len(sc.data) {
		switch sc.data[sc.pos] {
		case ' ', '\t', '\n', '\r':
			sc.pos++
		default:
			return
		}
	}
}

func (sc *jsonScanner) value() (*jsonSpan, error) {
	s := &jsonSpan{start: sc.pos}
	if sc.pos >= len(sc.data) {
		return nil, errors.New("unexpected end of JSON")
	}
	switch c := sc.data[sc.pos]; c {
	case '{':
		s.kind = '{'
		sc.pos++
		sc.ws()
		for sc.pos < len(sc.data) && sc.data[sc.pos] != '}' {
			keyStart := sc.pos
			sc.str()
			var name string
			_ = json.Unmarshal(sc.data[keyStart:sc.pos], &name)
			if i, _ := s.member(name); i >= 0 {
				line, col := lineCol(sc.data, int64(keyStart)+1) // lineCol counts as a syntax error's offset does
				return nil, fmt.Errorf("line %d, column %d: the member %q comes twice in one object; keep one of them", line, col, name)
			}
			sc.ws()
			sc.pos++ // ':'
			sc.ws()
			v, err := sc.value()
			if err != nil {
				return nil, err
			}
			s.members = append(s.members, jsonMember{name: name, keyStart: keyStart, val: v})
			sc.ws()
			if sc.pos < len(sc.data) && sc.data[sc.pos] == ',' {
				sc.pos++
				sc.ws()
			}
		}
		sc.pos++ // '}'
	case '[':
		s.kind = '['
		sc.pos++
		sc.ws()
		for sc.pos < len(sc.data) && sc.data[sc.pos] != ']' {
			if _, err := sc.value(); err != nil {
				return nil, err
			}
			sc.ws()
			if sc.pos < len(sc.data) && sc.data[sc.pos] == ',' {
				sc.pos++
				sc.ws()
			}
		}
		sc.pos++ // ']'
	case '"':
		s.kind = '"'
		sc.str()
	default:
		for sc.pos < len(sc.data) && !bytes.ContainsRune([]byte(" \t\r\n,]}"), rune(sc.data[sc.pos])) {
			sc.pos++
		}
	}
	s.end = sc.pos
	return s, nil
}

// str moves past the string at pos.
func (sc *jsonScanner) str() {
	sc.pos++ // '"'
	for sc.pos < len(sc.data) {
		switch sc.data[sc.pos] {
		case '\\':
			sc.pos += 2
		case '"':
			sc.pos++
			return
		default:
			sc.pos++
		}
	}
}

// decodeJSON decodes data (one valid JSON value) keeping member order and
// numbers as written, as [parseOrderedJSON] does, for comparisons.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return decodeOrdered(dec, data)
}

// lineIndent is the indentation of the line holding offset off, and
// whether off is the first thing on it.
func lineIndent(data []byte, off int) (string, bool) {
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	i := start
	for i < off && (data[i] == ' ' || data[i] == '\t') {
		i++
	}
	return string(data[start:i]), i == off
}

// encodeAt encodes v as JSON indented by unit per level, for a place
// whose line is indented by ind.
func encodeAt(v any, ind, unit string) ([]byte, error) {
	b, err := encodeOrderedJSON(v, unit)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.ReplaceAll(b, []byte("\n"), []byte("\n"+ind)), nil
}

func splice(data []byte, start, end int, with []byte) []byte {
	out := make([]byte, 0, len(data)-(end-start)+len(with))
	out = append(out, data[:start]...)
	out = append(out, with...)
	return append(out, data[end:]...)
}

// jsonInsert adds the member name: v at the end of the object obj in data,
// on a line of its own indented as its last member is (or one unit deeper
// than the object's line, in an empty object), or after it on the same
// line when the object is written on one line.
func jsonInsert(data []byte, obj *jsonSpan, name string, v any, unit string) ([]byte, error) {
	var key bytes.Buffer
	writeJSONString(&key, name)
	if len(obj.members) == 0 {
		ind, _ := lineIndent(data, obj.start)
		val, err := encodeAt(v, ind+unit, unit)
		if err != nil {
			return nil, err
		}
		text := "\n" + ind + unit + key.String() + ": " + string(val) + "\n" + ind
		return splice(data, obj.start+1, obj.end-1, lineEnds(data, []byte(text))), nil
	}
	last := obj.members[len(obj.members)-1]
	ind, own := lineIndent(data, last.keyStart)
	sep := ",\n" + ind
	if !own {
		ind, _ = lineIndent(data, obj.start)
		sep = ", "
	}
	val, err := encodeAt(v, ind, unit)
	if err != nil {
		return nil, err
	}
	return splice(data, last.val.end, last.val.end, lineEnds(data, []byte(sep+key.String()+": "+string(val)))), nil
}

// lineEnds gives text, to be put into data, data's line ends: \r\n when
// data has them.
func lineEnds(data, text []byte) []byte {
	if !bytes.Contains(data, []byte("\r\n")) {
		return text
	}
	return bytes.ReplaceAll(text, []byte("\n"), []byte("\r\n"))
}

// jsonRemove takes member i out of the object obj in data, with the comma
// and space that separate it from its neighbour; the last member leaves {}.
func jsonRemove(data []byte, obj *jsonSpan, i int) []byte {
	switch {
	case len(obj.members) == 1:
		return splice(data, obj.start+1, obj.end-1, nil)
	case i > 0:
		return splice(data, obj.members[i-1].val.end, obj.members[i].val.end, nil)
	default:
		return splice(data, obj.members[0].keyStart, obj.members[1].keyStart, nil)
	}
}

// checkJSONEdit makes sure that next holds what old holds with only the
// member name of the object key changed to v (removed when v is nil): a
// guard against an edit that would change anything else.
func checkJSONEdit(path string, old, next []byte, key, name string, v any) error {
	want, err1 := decodeJSON(old)
	got, err2 := decodeJSON(next)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("%s: %w; nothing was changed", path, err)
	}
	if top, ok := want.(*jsonObject); ok {
		servers, ok := memberObject(top, key)
		if !ok {
			servers = newJSONObject()
			top.set(key, servers)
		}
		if v == nil {
			servers.remove(name)
		} else {
			servers.set(name, v)
		}
	}
	if !sameValue(want, got) {
		return fmt.Errorf("%s: agentctl's edit would change more than its entry %s.%s (a bug in agentctl); nothing was changed", path, key, name)
	}
	return nil
}

// TOML (Codex's config.toml), edited in place where it can be.
//
// The entry's tables ([mcp_servers.NAME] and the tables under it) are
// found by a scan of the file's lines and only they are replaced or
// removed; a new entry is written after the last [mcp_servers.*] table (or
// at the end). The result is decoded and must hold exactly the file's
// values with the entry changed; when it does not (an entry written as an
// inline table or dotted keys), the file is decoded and encoded again as a
// whole, which keeps its values but not its comments (the backup keeps
// them).

// tomlSection is a table header's line and the lines up to the last one
// with something on it (not blank, not only a comment) before the next.
type tomlSection struct {
	path       []string
	array      bool
	start, end int
}

func scanTOML(s []byte) []tomlSection {
	var secs []tomlSection
	ml := "" // the closing quotes, inside a multi-line string
	depth := 0
	for pos := 0; pos < len(s); {
		next := len(s)
		if i := bytes.IndexByte(s[pos:], '\n'); i >= 0 {
			next = pos + i + 1
		}
		line := s[pos:next]
		i, content := 0, ml != "" || depth > 0
		if ml == "" && depth == 0 {
			t := bytes.TrimLeft(line, " \t")
			if len(t) > 0 && t[0] == '[' {
				if path, array, n, ok := tomlHeader(t); ok {
					secs = append(secs, tomlSection{path: path, array: array, start: pos, end: next})
					i = len(line) - len(t) + n
				}
			}
		}
		for i < len(line) {
			c := line[i]
			if ml != "" {
				switch {
				case bytes.HasPrefix(line[i:], []byte(ml)):
					i += 3
					for n := 0; n < 2 && i < len(line) && line[i] == ml[0]; n++ {
						i++
					}
					ml = ""
				case ml[0] == '"' && c == '\\':
					i += 2
				default:
					i++
				}
				continue
			}
			switch c {
			case '#':
				i = len(line)
				continue
			case ' ', '\t', '\r', '\n':
			case '"', '\'':
				content = true
				if q := bytes.Repeat([]byte{c}, 3); bytes.HasPrefix(line[i:], q) {
					ml = string(q)
					i += 3
					continue
				}
				j := i + 1
				for j < len(line) && line[j] != c && line[j] != '\n' {
					if c == '"' && line[j] == '\\' {
						j++
					}
					j++
				}
				i = j + 1
				continue
			case '[', '{':
				depth++
				content = true
			case ']', '}':
				depth--
				content = true
			default:
				content = true
			}
			i++
		}
		if content && len(secs) > 0 && secs[len(secs)-1].start != pos {
			secs[len(secs)-1].end = next
		}
		pos = next
	}
	return secs
}

// tomlHeader reads a table header ([a."b".c] or [[a.b]]) at the start of
// t: its keys, whether it is an array of tables, and its length.
func tomlHeader(t []byte) (path []string, array bool, n int, ok bool) {
	i := 1
	if len(t) > 1 && t[1] == '[' {
		array, i = true, 2
	}
	for {
		for i < len(t) && (t[i] == ' ' || t[i] == '\t') {
			i++
		}
		if i >= len(t) {
			return nil, false, 0, false
		}
		switch t[i] {
		case '"':
			j := i + 1
			for j < len(t) && t[j] != '"' {
				if t[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(t) {
				return nil, false, 0, false
			}
			var k string
			if _, err := toml.Decode("k = "+string(t[i:j+1]), &struct {
				K *string `toml:"k"`
			}{&k}); err != nil {
				return nil, false, 0, false
			}
			path = append(path, k)
			i = j + 1
		case '\'':
			j := bytes.IndexByte(t[i+1:], '\'')
			if j < 0 {
				return nil, false, 0, false
			}
			path = append(path, string(t[i+1:i+1+j]))
			i += j + 2
		default:
			j := i
			for j < len(t) && (t[j] == '_' || t[j] == '-' || t[j] >= '0' && t[j] <= '9' || t[j] >= 'a' && t[j] <= 'z' || t[j] >= 'A' && t[j] <= 'Z') {
				j++
			}
			if j == i {
				return nil, false, 0, false
			}
			path = append(path, string(t[i:j]))
			i = j
		}
		for i < len(t) && (t[i] == ' ' || t[i] == '\t') {
			i++
		}
		if i < len(t) && t[i] == '.' {
			i++
			continue
		}
		if i < len(t) && t[i] == ']' {
			i++
			if array {
				if i >= len(t) || t[i] != ']' {
					return nil, false, 0, false
				}
				i++
			}
			return path, array, i, true
		}
		return nil, false, 0, false
	}
}

// tomlEntryBlock is the entry's tables as TOML: [KEY.NAME] and any under it.
func tomlEntryBlock(key, name string, entry any) ([]byte, error) {
	var b bytes.Buffer
	enc := toml.NewEncoder(&b)
	enc.Indent = ""
	if err := enc.Encode(map[string]any{key: map[string]any{name: entry}}); err != nil {
		return nil, err
	}
	out := b.Bytes()
	// The encoder writes the empty [KEY] first: the file has it, or needs
	// none.
	if i := bytes.IndexByte(out, '\n'); i >= 0 && !bytes.Contains(out[:i], []byte(".")) {
		out = out[i+1:]
	}
	return out, nil
}

// tomlCut removes [start, end) from s with the blank line before it (or,
// at the start of the file, after it).
func tomlCut(s []byte, start, end int) []byte {
	switch {
	case start >= 2 && s[start-1] == '\n' && s[start-2] == '\n':
		start--
	case start == 0 && end < len(s) && s[end] == '\n':
		end++
	}
	return splice(s, start, end, nil)
}

// tomlEdit sets (or, with entry nil, removes) KEY.NAME in the TOML file s,
// changing only that entry's tables.
func tomlEdit(s []byte, key, name string, entry any) ([]byte, error) {
	secs := scanTOML(s)
	var mine []tomlSection
	lastKey := -1
	for i, sec := range secs {
		if len(sec.path) >= 1 && sec.path[0] == key {
			lastKey = i
		}
		if len(sec.path) >= 2 && sec.path[0] == key && sec.path[1] == name {
			mine = append(mine, sec)
		}
	}
	var block []byte
	if entry != nil {
		var err error
		if block, err = tomlEntryBlock(key, name, entry); err != nil {
			return nil, err
		}
	}
	out := s
	for i := len(mine) - 1; i >= 0; i-- {
		if i == 0 && entry != nil {
			out = splice(out, mine[0].start, mine[0].end, block)
		} else {
			out = tomlCut(out, mine[i].start, mine[i].end)
		}
	}
	if len(mine) > 0 || entry == nil {
		return out, nil
	}
	at := len(out)
	if lastKey >= 0 {
		at = secs[lastKey].end
	}
	var text []byte
	if at > 0 && out[at-1] != '\n' {
		text = append(text, '\n')
	}
	if at > 0 {
		text = append(text, '\n')
	}
	text = append(text, block...)
	return splice(out, at, at, text), nil
}

// decodeTOML decodes a client's TOML file, or says where it does not parse.
func decodeTOML(path string, data []byte) (map[string]any, error) {
	var m map[string]any
	if _, err := toml.Decode(string(data), &m); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, unreadable(path, fmt.Sprintf("line %d: %s", pe.Position.Line, pe.Message))
		}
		return nil, unreadable(path, err.Error())
	}
	return m, nil
}

// editTOML changes KEY.NAME in s to entry (removes it when nil), where doc
// is s decoded: in place when the result holds exactly that change, else
// by encoding the whole changed document again.
func editTOML(path string, s []byte, doc map[string]any, key, name string, entry any) ([]byte, error) {
	servers, _ := doc[key].(map[string]any)
	if servers == nil {
		servers = map[string]any{}
		doc[key] = servers
	}
	if entry == nil {
		delete(servers, name)
	} else {
		servers[name] = entry
	}
	if next, err := tomlEdit(s, key, name, entry); err == nil {
		var got map[string]any
		if _, err := toml.Decode(string(next), &got); err == nil && sameValue(got, doc) {
			return next, nil
		}
	}
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(doc); err != nil {
		return nil, fmt.Errorf("%s: %w; nothing was changed", path, err)
	}
	return b.Bytes(), nil
}
