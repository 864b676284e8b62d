package launch

import (
	"regexp"
	"slices"
	"strings"
	"sync"
)

// secretName matches the names of flags and environment variables whose
// values are credentials: API keys, tokens, passwords.
// It is compiled on first use: only printing a plan needs it.
var secretName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(^|[-_])(api[-_]?key|key|token|secret|password|passwd|credentials?|auth(orization)?|bearer)$`)
})

// Hidden is what a secret value is printed as.
const Hidden = "<hidden>"

// Redacted is a copy of the plan for printing (`--dry-run`, `instance env`):
// the value of every argument that follows a secret-looking flag
// (`--api-key K`, `--token=T`) and of every secret-looking environment
// variable is [Hidden]. The plan itself is left as it is.
func (p *Plan) Redacted() *Plan {
	c := *p
	c.Args = slices.Clone(p.Args)
	for i := 0; i < len(c.Args); i++ {
		a := c.Args[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !secretName().MatchString(name) {
			continue
		}
		if hasValue {
			c.Args[i] = a[:strings.IndexByte(a, '=')+1] + Hidden
		} else if i+1 < len(c.Args) {
			c.Args[i+1] = Hidden
			i++
		}
	}
	c.Env = slices.Clone(p.Env)
	for i, e := range c.Env {
		if secretName().MatchString(e.Name) {
			c.Env[i].Value = Hidden
		}
	}
	return &c
}
