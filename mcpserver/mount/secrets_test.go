package mount

import "testing"

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"GITHUB_TOKEN": true, "OPENAI_API_KEY": true, "AWS_SECRET_ACCESS_KEY": true, "api-key": true,
		"password": true, "DB_PASSWD": true, "auth": true, "X_AUTHORIZATION": true, "credentials": true,
		"PATH": false, "HOME": false, "TOKENIZER": false, "KEYBOARD": false, "MONKEY": false, "port": false,
	} {
		if got := SecretName(name); got != want {
			t.Errorf("SecretName(%q) = %v, want %v", name, got, want)
		}
	}
}
