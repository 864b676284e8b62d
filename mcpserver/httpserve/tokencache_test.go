package httpserve

import (
	"context"
	"testing"
	"time"
)

// TestCachedTokens: an accepted token is answered from the cache until the
// time to live passes, then asked again (a rotated token is refused then); a
// refused or different token is always asked.
func TestCachedTokens(t *testing.T) {
	valid := map[string]string{"a": "tok-a"}
	asked := 0
	c := CachedTokens(TokenCheckerFunc(func(_ context.Context, id, tok string) (bool, error) {
		asked++
		return valid[id] != "" && valid[id] == tok, nil
	}), time.Second).(*tokenCache)
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	ctx := context.Background()
	check := func(id, tok string, want bool, wantAsked int) {
		t.Helper()
		ok, err := c.CheckToken(ctx, id, tok)
		if err != nil || ok != want || asked != wantAsked {
			t.Fatalf("CheckToken(%s, %s) = %v, %v after %d questions; want %v after %d", id, tok, ok, err, asked, want, wantAsked)
		}
	}
	check("a", "tok-a", true, 1)
	check("a", "tok-a", true, 1) // cached
	check("a", "wrong", false, 2)
	check("b", "tok-a", false, 3) // a token opens its own instance only
	valid["a"] = "tok-a2"         // rotated
	check("a", "tok-a", true, 3)  // still within the time to live
	now = now.Add(time.Second)
	check("a", "tok-a", false, 4)
	check("a", "tok-a2", true, 5)
	check("a", "tok-a2", true, 5)
}

// TestRecheckForgetsARotatedToken: Recheck asks the checker past the
// cache, and forgets the acceptance of a token the checker now refuses,
// which is refused from then on, before the time to live passes.
func TestRecheckForgetsARotatedToken(t *testing.T) {
	valid := map[string]string{"a": "tok-a"}
	asked := 0
	c := CachedTokens(TokenCheckerFunc(func(_ context.Context, id, tok string) (bool, error) {
		asked++
		return valid[id] != "" && valid[id] == tok, nil
	}), time.Hour)
	ctx := context.Background()
	if ok, _ := c.CheckToken(ctx, "a", "tok-a"); !ok {
		t.Fatal("the valid token was refused")
	}
	if ok, err := Recheck(ctx, c, "a", "tok-a"); !ok || err != nil || asked != 2 {
		t.Errorf("Recheck of the valid token: %v, %v after %d questions; want true after 2", ok, err, asked)
	}
	valid["a"] = "tok-a2" // rotated
	if ok, _ := c.CheckToken(ctx, "a", "tok-a"); !ok {
		t.Fatal("the cache did not answer within its time to live")
	}
	if ok, err := Recheck(ctx, c, "a", "tok-a"); ok || err != nil {
		t.Errorf("Recheck of the rotated token: %v, %v; want false", ok, err)
	}
	if ok, _ := c.CheckToken(ctx, "a", "tok-a"); ok {
		t.Error("the rotated token is still accepted from the cache after Recheck refused it")
	}
	if ok, _ := Recheck(ctx, TokenCheckerFunc(func(context.Context, string, string) (bool, error) { return true, nil }), "a", "x"); !ok {
		t.Error("Recheck of a checker without a cache did not ask it")
	}
}

// TokenCheckerFunc adapts a function to [TokenChecker].
type TokenCheckerFunc func(ctx context.Context, instanceID, token string) (bool, error)

// CheckToken calls f.
func (f TokenCheckerFunc) CheckToken(ctx context.Context, instanceID, token string) (bool, error) {
	return f(ctx, instanceID, token)
}
