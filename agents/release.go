package agents

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// InstalledRelease is the release of def's client that lookPath finds,
// where it can be read cheaply: the program is resolved through its
// symlinks (npm's bin links) and the package.json of def.NPMPackage above
// it gives the version; the client is never started. ok is false when the
// definition names no npm package, the program is not found, or no such
// package.json is above it (a client installed some other way).
func InstalledRelease(def *Definition, lookPath func(string) (string, error)) (version string, ok bool) {
	if def.NPMPackage == "" {
		return "", false
	}
	path, err := lookPath(def.ProgramOrDefault())
	if err != nil {
		return "", false
	}
	if path, err = filepath.EvalSymlinks(path); err != nil {
		return "", false
	}
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		if v, ok := packageVersion(filepath.Join(dir, "package.json"), def.NPMPackage); ok {
			return v, true
		}
		if parent := filepath.Dir(dir); parent == dir {
			return "", false
		}
	}
}

// packageVersion is the version in the package.json at path, if that is
// the manifest of package name.
func packageVersion(path, name string) (string, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	var m struct{ Name, Version string }
	if json.Unmarshal(data, &m) != nil || m.Name != name || m.Version == "" {
		return "", false
	}
	return m.Version, true
}

// NewerRelease reports whether release a is newer than release b, both
// dotted numbers as npm writes them ("2.1.332"; a pre-release suffix such
// as "-beta.1" is ignored). false when either is not such a release.
func NewerRelease(a, b string) bool {
	pa, oka := releaseParts(a)
	pb, okb := releaseParts(b)
	if !oka || !okb {
		return false
	}
	for i := 0; i < max(len(pa), len(pb)); i++ {
		var x, y int
		if i < len(pa) {
			x = pa[i]
		}
		if i < len(pb) {
			y = pb[i]
		}
		if x != y {
			return x > y
		}
	}
	return false
}

func releaseParts(v string) ([]int, bool) {
	v = strings.TrimPrefix(v, "v")
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v = v[:i]
	}
	if v == "" {
		return nil, false
	}
	var parts []int
	for _, f := range strings.Split(v, ".") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return nil, false
		}
		parts = append(parts, n)
	}
	return parts, true
}
