package mount

import (
	"regexp"
	"sync"
)

// secretName matches the names of flags and environment variables whose
// values are credentials: API keys, tokens, passwords. Compiled on first
// use.
//
// A name is split into parts at '-', '_' and '.'. It is a credential's
// when its last part is a credential's word (GITHUB_TOKEN, DB_PASS,
// MYSQL_PWD, --api-key, CLIENT_SECRETS), when it ends with password or
// passwd even inside a part (PGPASSWORD, ROOTPASSWD), when secret,
// password or passwd is one of its parts (SECRET_KEY_BASE), or when a
// camelCase flag ends with such a word (apiToken, dbPwd). Harmless names
// that hold these letters stay out: PWD and OLDPWD (the working
// directory), TOKENIZER, KEYBOARD, MONKEY, COMPASS, PASSENGER,
// SSH_AUTH_SOCK, AWS_ACCESS_KEY_ID.
var secretName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)` +
		`(^|[-_.])(api[-_]?key|key|token|secret|pass|passphrase|credential|auth|authorization|bearer)s?$` +
		`|[-_.]pwd$` + // not PWD alone: the working directory
		`|passw(or)?ds?$` +
		`|(^|[-_.])(secret|password|passwd)([-_.]|$)` +
		`|(?-i:[a-z0-9](Key|Token|Secret|Password|Passwd|Pwd|Passphrase|Credential|Auth)s?$)`)
})

// SecretName reports whether a flag or an environment variable named name
// (without its dashes) holds a credential, by its name: GITHUB_TOKEN,
// OPENAI_API_KEY, PGPASSWORD, DB_PASS, MYSQL_PWD, --password, --auth. What
// a server prints of such a value is taken out before a person or a model
// sees it.
func SecretName(name string) bool { return secretName().MatchString(name) }
