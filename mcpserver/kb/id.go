package kb

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxIDBytes and maxComponentBytes bound an id; the component limit
// leaves room for the temporary file's name within NAME_MAX (255).
const (
	maxIDBytes        = 1024
	maxComponentBytes = 200
)

// CleanConceptID checks a concept id and returns its canonical form. A valid
// id is a relative, slash-separated path of non-hidden names, without "."
// or ".." components, backslashes, control characters or an empty name.
// A single trailing ".md" is accepted and removed ("guides/setup.md" is
// "guides/setup"), so canonical ids never end in ".md"; a file named
// "x.md.md" is therefore not a concept. The error says what is wrong and
// what a valid id looks like.
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
	case strings.IndexByte(id, 0) >= 0:
		return bad("it contains a NUL byte")
	case strings.IndexFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return bad("it contains a control character")
	case strings.IndexByte(id, '\\') >= 0:
		return bad(`it contains a backslash; separate folders with "/"`)
	case id[0] == '/':
		return bad("it is an absolute path; ids are relative to the knowledge base")
	case len(id) > maxIDBytes:
		return bad(fmt.Sprintf("it is longer than %d bytes", maxIDBytes))
	}
	clean := strings.TrimSuffix(id, ".md")
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
