package main

import (
	"strings"
	"testing"

	"github.com/agentctl/agentctl/mcpserver/mount"
)

// TestKBFlagPath: --kb's folder ends at the first comma, unless it is in
// quotes (single or double, as --mcp's command is quoted), so a folder
// whose path has a comma can be mounted; unquoted, the path is taken as
// written (backslashes of a Windows path, an apostrophe). An unknown
// option, and a quote left open, say how to quote a path.
func TestKBFlagPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		flag, path, prefix string
		ro                 bool
		max                int64
	}{
		{flag: `n="./Notes, 2024"`, path: "./Notes, 2024"},
		{flag: `n='./Notes, 2024',ro,prefix=p`, path: "./Notes, 2024", ro: true, prefix: "p"},
		{flag: `n="./a \"b\", c\\d",max=4096`, path: `./a "b", c\d`, max: 4096},
		{flag: `n='C:\docs, old\'`, path: `C:\docs, old\`},
		{flag: `n=./docs,ro`, path: "./docs", ro: true},
		{flag: `n=C:\Users\me\docs,prefix=d`, path: `C:\Users\me\docs`, prefix: "d"},
		{flag: `n=./Bob's notes,ro`, path: "./Bob's notes", ro: true},
		{flag: `n=./say "hi"`, path: `./say "hi"`},
	} {
		m, err := parseKBFlag(tc.flag)
		if err != nil {
			t.Errorf("%s: %v", tc.flag, err)
			continue
		}
		if m.Kind != mount.KindKB || m.Name != "n" || m.Path != tc.path || m.ReadOnly != tc.ro || m.ToolPrefix != tc.prefix || m.MaxBytes != tc.max {
			t.Errorf("%s: %+v, want path %q", tc.flag, m, tc.path)
		}
	}
	const quote = `a DIR with a comma goes in quotes: --kb 'NAME="DIR, 2024",ro'`
	for _, tc := range []struct{ flag, want string }{
		{`n=./Notes, 2024`, `invalid --kb "n=./Notes, 2024": unknown option " 2024" (a ',' outside quotes ends the folder's path); use --kb NAME=DIR, optionally followed by ,prefix=P ,ro ,max=BYTES; ` + quote},
		{`n="./Notes, 2024`, `unterminated " quote; use --kb NAME=DIR`},
		{`n="./Notes, 2024"ro`, `"./Notes, 2024" is followed by "ro", not by a ','`},
		{`n=""`, `the folder's path in quotes is empty`},
		{`n=,ro`, `no folder before the first ','`},
		{`n=docs,`, `unknown option ""`},
	} {
		_, err := parseKBFlag(tc.flag)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), quote) {
			t.Errorf("%s: %v, want an error saying %q and how to quote", tc.flag, err, tc.want)
		}
		if _, ok := err.(*usageError); !ok {
			t.Errorf("%s: %T, want a usage error", tc.flag, err)
		}
	}
}
