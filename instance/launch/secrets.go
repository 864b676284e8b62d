package launch

import (
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/agentctl/agentctl/instance"
)

// secretName matches the names of flags and environment variables whose
// values are credentials: API keys, tokens, passwords.
// It is compiled on first use: only printing a plan needs it.
var secretName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(^|[-_])(api[-_]?key|key|token|secret|password|passwd|credentials?|auth(orization)?|bearer)$`)
})

// Hidden is what a secret value is printed as.
const Hidden = "<hidden>"

// bearerValue matches the credential of an Authorization header value
// written anywhere in an argument ("Bearer T" in Codex's -c override of an
// HTTP instance), and an instance token ([instance.TokenPrefix]) wherever
// it is.
var (
	bearerValue   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)(\bbearer\s+)[^\s"',}]+`) })
	instanceToken = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(instance.TokenPrefix + `[A-Za-z0-9_-]{43}`) })
)

// hideCredentials replaces bearer credentials and instance tokens in s.
func hideCredentials(s string) string {
	s = bearerValue().ReplaceAllString(s, "${1}"+Hidden)
	return instanceToken().ReplaceAllString(s, Hidden)
}

// Redacted is a copy of the plan for printing (`--dry-run`, `instance env`):
// the value of every argument that follows a secret-looking flag
// (`--api-key K`, `--token=T`) and of every secret-looking environment
// variable is [Hidden], and so is a bearer credential or an instance token
// anywhere in an argument or value. The plan itself is left as it is.
func (p *Plan) Redacted() *Plan {
	c := *p
	c.Args = slices.Clone(p.Args)
	for i, a := range c.Args {
		c.Args[i] = hideCredentials(a)
	}
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
		} else {
			c.Env[i].Value = hideCredentials(e.Value)
		}
	}
	return &c
}
