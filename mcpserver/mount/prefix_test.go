package mount

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

func TestSanitizePrefix(t *testing.T) {
	for in, want := range map[string]string{
		"docs":          "docs",
		"Docs":          "docs",
		"My Docs!":      "my_docs",
		"  team--wiki ": "team_wiki",
		"a__b":          "a_b",
		"3D docs":       "3d_docs",
		"!!!":           "",
		"__x__":         "x",
		"Ünïcode kb":    "n_code_kb",
	} {
		if got := SanitizePrefix(in); got != want {
			t.Errorf("SanitizePrefix(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestResolveToolPrefix(t *testing.T) {
	kb := func(name, prefix string) Mount { return Mount{Kind: KindKB, Name: name, ToolPrefix: prefix} }
	tests := []struct {
		spec       Mount
		mode       PrefixMode
		wantPrefix string
		wantOrigin PrefixOrigin
		wantErr    string
	}{
		{kb("docs", ""), PrefixModeMountName, "docs", OriginDerived, ""},
		{kb("Team Wiki", ""), PrefixModeMountName, "team_wiki", OriginDerived, ""},
		{kb("docs", "kb"), PrefixModeMountName, "kb", OriginExplicit, ""},
		{kb("docs", "kb"), PrefixModeOff, "kb", OriginExplicit, ""}, // explicit wins, always
		{kb("docs", ""), PrefixModeOff, "", OriginOff, ""},
		{kb("3D docs", ""), PrefixModeOff, "", OriginOff, ""}, // off never derives, so never fails
		{kb("3D docs", ""), PrefixModeMountName, "", "", `knowledge base "3D docs": cannot derive a tool prefix from its name ("3D docs" -> "3d_docs": starts with a digit); set an explicit tool_prefix`},
		{kb("!!!", ""), PrefixModeMountName, "", "", `("!!!" -> "": empty)`},
		{kb("docs", "9kb"), PrefixModeMountName, "", "", `tool_prefix "9kb" starts with a digit`},
		{kb("docs", "a__b"), PrefixModeMountName, "", "", `tool_prefix "a__b" contains "__"`},
		{kb("docs", "Kb"), PrefixModeMountName, "", "", `tool_prefix "Kb" has characters other than`},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s/%s", tt.spec.Name, tt.spec.ToolPrefix, tt.mode), func(t *testing.T) {
			p, origin, err := ResolveToolPrefix(tt.spec, tt.mode, tt.spec.Name)
			if tt.wantErr != "" {
				var pe *PrefixError
				if !errors.As(err, &pe) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %s", err, tt.wantErr)
				}
				if pe.Derivation != "" && !strings.Contains(err.Error(), `tool_prefix_mode = "off"`) {
					t.Fatalf("a failed derivation must name both escapes: %v", err)
				}
				return
			}
			if err != nil || p != tt.wantPrefix || origin != tt.wantOrigin {
				t.Fatalf("got %q %q %v, want %q %q", p, origin, err, tt.wantPrefix, tt.wantOrigin)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	kb := func(name, prefix string) Mount { return Mount{Kind: KindKB, Name: name, ToolPrefix: prefix} }
	t.Run("single mount gets no prefix", func(t *testing.T) {
		ms, err := Resolve("agentctl", PrefixModeMountName, []Mount{kb("3D docs", "")})
		if err != nil || ms[0].EffectivePrefix != "" || ms[0].PrefixOrigin != OriginSingleMount {
			t.Fatalf("%+v %v", ms, err)
		}
	})
	t.Run("single mount keeps an explicit prefix", func(t *testing.T) {
		ms, err := Resolve("agentctl", PrefixModeMountName, []Mount{kb("docs", "d")})
		if err != nil || ms[0].EffectivePrefix != "d" || ms[0].PrefixOrigin != OriginExplicit {
			t.Fatalf("%+v %v", ms, err)
		}
	})
	t.Run("two mounts derive", func(t *testing.T) {
		ms, err := Resolve("agentctl", PrefixModeMountName, []Mount{kb("docs", ""), kb("Notes", "")})
		if err != nil || ms[0].EffectivePrefix != "docs" || ms[1].EffectivePrefix != "notes" || ms[1].PrefixOrigin != OriginDerived {
			t.Fatalf("%+v %v", ms, err)
		}
		if got := ms[0].Announcement(); got != "kb docs: tools prefixed docs__ (derived from the mount name; set tool_prefix or tool_prefix_mode=off to change)" {
			t.Fatalf("announcement %q", got)
		}
		if ms[0].ToolName("concept_read") != "docs__concept_read" {
			t.Fatal(ms[0].ToolName("concept_read"))
		}
	})
	t.Run("mixed explicit and off", func(t *testing.T) {
		ms, err := Resolve("agentctl", PrefixModeOff, []Mount{kb("docs", "d"), kb("notes", "")})
		if err != nil || ms[0].EffectivePrefix != "d" || ms[1].EffectivePrefix != "" || ms[1].PrefixOrigin != OriginOff || ms[1].Announcement() != "" || ms[1].ToolName("x") != "x" {
			t.Fatalf("%+v %v", ms, err)
		}
	})
	for name, tc := range map[string]struct {
		specs []Mount
		want  string
	}{
		"Docs and docs":                  {[]Mount{kb("Docs", ""), kb("docs", "")}, `knowledge base "Docs" and knowledge base "docs" both get the tool prefix "docs"`},
		"same explicit prefix":           {[]Mount{kb("a", "p"), kb("b", "p")}, `both get the tool prefix "p"`},
		"same name":                      {[]Mount{kb("a", "x"), kb("a", "y")}, `have the same name "a"; give one of them a different name`},
		"named like the server":          {[]Mount{kb("agentctl", "")}, `knowledge base "agentctl": server name "agentctl" is reserved for a built-in service; choose a different name`},
		"prefix like the server":         {[]Mount{kb("a", "agentctl"), kb("b", "")}, `server name "agentctl" is reserved`},
		"prefix is another's name":       {[]Mount{kb("docs", ""), kb("other", "docs")}, `both get the tool prefix "docs"`},
		"prefix is another's name (off)": {[]Mount{kb("docs", "x"), kb("other", "docs")}, `the tool prefix of the second is the name of the first ("docs")`},
		"3D docs among two":              {[]Mount{kb("3D docs", ""), kb("b", "")}, `starts with a digit`},
		"empty name":                     {[]Mount{kb(" ", "")}, `empty name`},
		"slash in name":                  {[]Mount{kb("a/b", "")}, `may not contain '/'`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Resolve("agentctl", PrefixModeMountName, tc.specs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %s", err, tc.want)
			}
		})
	}
}

var prefixShape = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// FuzzResolveToolPrefix: the result always has the prefix shape (or there
// is none) or is an error; it never panics.
func FuzzResolveToolPrefix(f *testing.F) {
	for _, s := range []string{"docs", "3D docs", "!!!", "a__b", "Ünï", "", "_", "x_y", "A-B-C"} {
		f.Add(s, "", false)
		f.Add("name", s, true)
	}
	f.Fuzz(func(t *testing.T, name, explicit string, off bool) {
		mode := PrefixModeMountName
		if off {
			mode = PrefixModeOff
		}
		s := SanitizePrefix(name)
		if s != "" && (!regexp.MustCompile(`^[a-z0-9_]+$`).MatchString(s) || strings.Contains(s, "__") || strings.HasPrefix(s, "_") || strings.HasSuffix(s, "_")) {
			t.Fatalf("SanitizePrefix(%q) = %q", name, s)
		}
		p, origin, err := ResolveToolPrefix(Mount{Kind: KindKB, Name: name, ToolPrefix: explicit}, mode, name)
		if err != nil {
			return
		}
		if p == "" {
			if origin != OriginOff {
				t.Fatalf("no prefix with origin %q", origin)
			}
			return
		}
		if !prefixShape.MatchString(p) || strings.Contains(p, "__") {
			t.Fatalf("ResolveToolPrefix(%q, %q) = %q", name, explicit, p)
		}
		if explicit != "" && (p != explicit || origin != OriginExplicit) {
			t.Fatalf("explicit %q lost: %q %q", explicit, p, origin)
		}
	})
}

// TestResolveSameNameAdvice: two mounts of one name are told to rename
// one; a prefix does not tell them apart, so it is not offered.
func TestResolveSameNameAdvice(t *testing.T) {
	_, err := Resolve("agentctl", PrefixModeMountName, []Mount{{Kind: KindKB, Name: "docs"}, {Kind: KindKB, Name: "docs", ToolPrefix: "x"}})
	if err == nil || !strings.HasSuffix(err.Error(), `have the same name "docs"; give one of them a different name`) {
		t.Errorf("got %v, want the advice to rename one, alone", err)
	}
}
