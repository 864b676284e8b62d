package main

// Auggie talks the Augment API (proto_augment.go) at the tenant URL of its
// session. AUGMENT_SESSION_AUTH carries the session as JSON; Auggie accepts it
// only with all three of accessToken, tenantURL and scopes (an array).

import "encoding/json"

func init() {
	registerClient(Client{
		ID:       "auggie",
		Package:  "@augmentcode/auggie",
		Version:  "0.36.0",
		Bin:      "auggie",
		Protocol: "augment",
		Setup:    setupAuggie,
	})
}

func setupAuggie(e *RunEnv) error {
	session, err := json.Marshal(map[string]any{
		"accessToken": "e2e-fake-token",
		"tenantURL":   e.ModelURL + "/",
		"scopes":      []string{"email"},
	})
	if err != nil {
		return err
	}
	e.Setenv("AUGMENT_SESSION_AUTH", string(session))
	e.Setenv("AUGMENT_DISABLE_AUTO_UPDATE", "1")
	return nil
}
