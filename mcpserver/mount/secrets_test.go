package mount

import "testing"

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"GITHUB_TOKEN": true, "OPENAI_API_KEY": true, "AWS_SECRET_ACCESS_KEY": true, "api-key": true,
		"password": true, "DB_PASSWD": true, "auth": true, "X_AUTHORIZATION": true, "credentials": true,
		// The password's many spellings: PostgreSQL's own variable, MySQL's,
		// the common short ones.
		"PGPASSWORD": true, "MYSQL_PWD": true, "DB_PASS": true, "ROOT_PASSWD": true, "ROOTPASSWD": true,
		"SMTP_PASSWORDS": true, "pass": true, "GPG_PASSPHRASE": true, "DB_PASSWORD_PROD": true,
		"SECRET_KEY_BASE": true, "CLIENT_SECRETS": true, "API_KEYS": true, "NPM_AUTH_TOKEN": true,
		"apiToken": true, "clientSecret": true, "dbPwd": true, "dbPassword": true, "accessKey": true,
		"PATH": false, "HOME": false, "TOKENIZER": false, "KEYBOARD": false, "MONKEY": false, "port": false,
		"PWD": false, "OLDPWD": false, "TOKENIZERS_PARALLELISM": false, "COMPASS": false, "BYPASS": false,
		"PASSENGER": false, "PASSWORDLESS": false, "SSH_AUTH_SOCK": false, "AWS_ACCESS_KEY_ID": false,
		"TOKEN_URL": false, "turkey": false, "hockey": false, "DATABASE_URL": false, "PGHOST": false,
	} {
		if got := SecretName(name); got != want {
			t.Errorf("SecretName(%q) = %v, want %v", name, got, want)
		}
	}
}
