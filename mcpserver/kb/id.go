package kb

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// maxIDBytes and maxComponentBytes bound an id; the component limit
// leaves room for the temporary file's name within NAME_MAX (255).
const (
	maxIDBytes        = 1024
	maxComponentBytes = 200
)

// CleanConceptID checks a concept id and returns its canonical form. A valid
// id is a relative, slash-separated path of non-hidden names, without "."
// or ".." components, backslashes, control characters, bidirectional
// controls (which make an id read differently from what it is), a drive
// letter ("C:x"), an empty name or a name that starts or ends with a space.
// A single trailing ".md" is accepted and removed ("guides/setup.md" is
// "guides/setup"), so canonical ids never end in ".md"; a file named
// "x.md.md" is therefore not a concept. The error says what is wrong and
// what a valid id looks like.
//
// Canonical ids are in Unicode normal form C, so the two spellings of "café"
// (precomposed "é", or "e" and a combining accent) are one concept, whose
// file is named in NFC: a write with either spelling creates "café.md" and a
// read with either finds it. A file whose name is not in NFC (as macOS's
// HFS+ stores names) is not a concept: the directory scan skips it, since
// its name is not a canonical id, and no id reads it.
func CleanConceptID(id string) (string, error) {
	bad := func(why string) (string, error) {
		return "", errorf(ErrInvalidConceptID,
			`invalid concept id %q: %s; a concept id is the concept's path inside the knowledge base, with "/" between folders and without ".md", e.g. "guides/setup" (get ids from concept_list or concept_search)`,
			id, why)
	}
	switch {
	case id == "":
		return bad("it is empty")
	case !utf8.ValidString(id):
		return bad("it is not valid UTF-8")
	}
	// Every check below is of the normalised id, which is what names the file.
	nfc := norm.NFC.String(id)
	switch {
	case strings.IndexByte(nfc, 0) >= 0:
		return bad("it contains a NUL byte")
	case strings.IndexFunc(nfc, unicode.IsControl) >= 0:
		return bad("it contains a control character; remove it")
	case strings.IndexFunc(nfc, isBidiControl) >= 0:
		r, _ := utf8.DecodeRuneInString(nfc[strings.IndexFunc(nfc, isBidiControl):])
		return bad(fmt.Sprintf("it contains the invisible bidirectional control %U, which makes it display differently from what it is; remove it", r))
	case hasDriveLetter(nfc):
		return bad(fmt.Sprintf("it starts with the drive letter %q; ids are relative to the knowledge base, without a drive", nfc[:2]))
	case strings.IndexByte(nfc, '\\') >= 0:
		return bad(`it contains a backslash; separate folders with "/"`)
	case nfc[0] == '/':
		return bad("it is an absolute path; ids are relative to the knowledge base")
	case len(nfc) > maxIDBytes:
		return bad(fmt.Sprintf("it is longer than %d bytes", maxIDBytes))
	}
	clean := strings.TrimSuffix(nfc, ".md")
	if clean == "" {
		return bad(`it has no name before ".md"`)
	}
	if strings.HasSuffix(clean, ".md") {
		return bad(`it ends in ".md" twice`)
	}
	if strings.HasSuffix(clean, "/") {
		return bad(`it ends in "/", which names a folder; list a folder with concept_list and a prefix`)
	}
	for c := range strings.SplitSeq(clean, "/") {
		switch {
		case c == "":
			return bad(`it has an empty folder name ("//" or a leading "/")`)
		case c == "." || c == "..":
			return bad(fmt.Sprintf("it has a %q component; ids cannot leave or re-enter folders", c))
		case c[0] == '.':
			return bad(fmt.Sprintf("%q is hidden (starts with \".\"); hidden files and folders are not concepts", c))
		case len(c) > maxComponentBytes:
			return bad(fmt.Sprintf("a name in it is longer than %d bytes", maxComponentBytes))
		case startsOrEndsWithSpace(c):
			return bad(fmt.Sprintf("the name %q starts or ends with a space; remove the space (spaces inside a name are fine)", c))
		}
	}
	return clean, nil
}

// isConceptID reports whether id is a canonical concept id: the ids list and
// search return are exactly the ones CleanConceptID leaves unchanged.
func isConceptID(id string) bool {
	c, err := CleanConceptID(id)
	return err == nil && c == id
}

// isBidiControl reports whether r is a Unicode bidirectional control: the
// embeddings and overrides U+202A–U+202E, the isolates U+2066–U+2069 and the
// marks U+200E, U+200F and U+061C.
func isBidiControl(r rune) bool { return unicode.Is(unicode.Bidi_Control, r) }

// hasDriveLetter reports whether id starts like a Windows drive: "C:",
// `c:\x`, "C:foo".
func hasDriveLetter(id string) bool {
	return len(id) >= 2 && id[1] == ':' && ('a' <= id[0] && id[0] <= 'z' || 'A' <= id[0] && id[0] <= 'Z')
}

func startsOrEndsWithSpace(name string) bool {
	first, _ := utf8.DecodeRuneInString(name)
	last, _ := utf8.DecodeLastRuneInString(name)
	return unicode.IsSpace(first) || unicode.IsSpace(last)
}
