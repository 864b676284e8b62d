package main

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"

	"github.com/spf13/cobra"
)

// UIOptions are the inputs of `ui`.
type UIOptions struct {
	IO    *IOStreams
	Store storeOpener
	// OpenBrowser opens url in the user's browser (tests replace it).
	OpenBrowser func(url string) error

	// BaseURL is --base-url, else the base_url setting; Listen is the
	// address `agentctl serve` listens on, for the URL when there is no
	// base URL.
	BaseURL string
	Listen  string
	// NewToken revokes every earlier operator token (and so every
	// session) before making the new one.
	NewToken bool
	Open     bool
	Output   string
}

// uiLogin is what `ui -o json` prints.
type uiLogin struct {
	LoginURL string `json:"login_url"`
	PageURL  string `json:"page_url"`
	TokenID  string `json:"token_id"`
	// Revoked is how many earlier operator tokens --new-token revoked.
	Revoked int `json:"revoked"`
}

// NewCmdUI is `agentctl ui`; runF replaces [uiRun] in tests.
func NewCmdUI(f *Factory, runF func(context.Context, *UIOptions) error) *cobra.Command {
	opts := &UIOptions{IO: f.IOStreams, Store: f.Store, OpenBrowser: openBrowser}
	cmd := &cobra.Command{
		Use:   "ui [--new-token] [--open]",
		Short: "Print a login URL for the web page of 'agentctl serve'",
		Long: `Print a URL that logs a browser in to the web page 'agentctl serve' serves at /:
every instance, its open questions with answer buttons, its events and run output
as they come, the names its model sees and its mounts' health.

The page takes an operator token, never an instance's token. The store keeps
operator tokens as SHA-256 hashes only, so a token cannot be shown again: ui makes
a new one each time and prints its login URL on stdout. Tokens do not expire;
the earlier ones keep working (each browser logged in stays so for 24 hours)
until --new-token revokes them all, which also logs out every browser: do that
when a login URL leaked. The first 'agentctl serve' on a store makes a token
and prints its URL itself.

Opening the URL logs the browser in: the page takes the token out of the address
bar and posts it, and the browser gets a session cookie (HttpOnly,
SameSite=Strict, and Secure behind an https base URL). Anyone with the URL can
log in until the token is revoked: send it only to yourself.

The URL is the base URL's (--base-url, AGENTCTL_BASE_URL or base_url in the
config file) when set, else http://LISTEN with --listen (the address given to
'agentctl serve', 127.0.0.1:7821 by default). The token is the store's, so a
login URL works with every 'agentctl serve' of the store (all the hosts of a
shared PostgreSQL store).`,
		Example: `  agentctl ui
  agentctl ui --open
  agentctl ui --new-token          # revoke every earlier token and session
  agentctl ui --listen 127.0.0.1:8080 -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(opts.Output); err != nil {
				return err
			}
			if opts.BaseURL == "" {
				opts.BaseURL = f.Config.String(keyBaseURL)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return uiRun(cmd.Context(), opts)
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&opts.NewToken, "new-token", false, "revoke every earlier operator token, logging out every browser, before making the new one")
	fs.BoolVar(&opts.Open, "open", false, "open the login URL in the browser (xdg-open, open) as well as printing it")
	fs.StringVar(&opts.BaseURL, "base-url", "", "the public URL of 'agentctl serve' (env AGENTCTL_BASE_URL, config base_url)")
	fs.StringVar(&opts.Listen, "listen", DefaultListen, "the address 'agentctl serve' listens on, for the URL when there is no base URL")
	addOutputFlag(cmd, &opts.Output, opts.IO)
	return cmd
}

func uiRun(ctx context.Context, opts *UIOptions) error {
	page := "http://" + opts.Listen
	if opts.BaseURL != "" {
		base, err := parseBaseURL(opts.BaseURL)
		if err != nil {
			return err
		}
		page = base.String()
	} else if err := checkListen("--listen", opts.Listen, true); err != nil {
		return err
	}
	// The store is made if there is none yet: the token is for the
	// 'agentctl serve' to come.
	st, err := opts.Store(ctx, true)
	if err != nil {
		return err
	}
	defer st.Close()
	token, t, revoked, err := st.CreateOperatorToken(ctx, opts.NewToken)
	if err != nil {
		return st.Explain(err)
	}
	out := uiLogin{LoginURL: loginURL(page, token), PageURL: page + "/", TokenID: t.ID, Revoked: revoked}
	switch {
	case opts.NewToken:
		opts.IO.Narrate("Made a new operator token and revoked %d earlier one(s): every browser logged in with them must log in again.", revoked)
	default:
		opts.IO.Narrate("Made a new operator token; the earlier ones still work ('agentctl ui --new-token' revokes them).")
	}
	if opts.Output == formatJSON {
		err = opts.IO.PrintJSON(out)
	} else {
		_, err = fmt.Fprintln(opts.IO.Out, out.LoginURL)
	}
	if err != nil {
		return err
	}
	if opts.Open {
		if err := opts.OpenBrowser(out.LoginURL); err != nil {
			opts.IO.Narrate("warning: could not open a browser (%v); open the URL above yourself", err)
		}
	}
	return nil
}

// openBrowser opens url with the desktop's opener, without waiting for the
// browser.
func openBrowser(url string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
