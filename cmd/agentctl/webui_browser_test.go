package main

// The web page of `agentctl serve` in a real browser: headless Chromium
// (Debian's chromium package) driven by chromedp, against the built binary.
// A client started by `agentctl instance run` asks a question through `mcp
// serve`; a person logs in with the URL serve printed, answers by clicking
// a choice, and sees the client's call return and the run's end arrive on
// the page without a reload. Without Chromium these tests fail (they never
// skip) and say how to install it.
//
// The screenshots in docs/ are made by
//
//	go test -run TestWebUIScreenshots ./cmd/agentctl -update-screenshots
//
// Without the flag the test renders the same pages and checks them, and
// writes nothing.

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image/png"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/chromedp/chromedp"
)

var updateScreenshots = flag.Bool("update-screenshots", false, "rewrite docs/ui-*.png from TestWebUIScreenshots")

// browserWait bounds each step in the browser: far beyond what a slow
// machine needs, so that only a hang fails.
const browserWait = time.Minute

// chromiumPath is the Chromium (or Chrome) program; without one the test
// fails saying how to install it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("the web page's browser tests need Chromium, which is not on PATH: install it with `apt-get install chromium` (Debian's package; .ci/run installs it when missing)")
	return ""
}

// newBrowser starts headless Chromium for the test, with a profile (and
// so cookies) of its own, and returns its tab of width x height.
func newBrowser(t *testing.T, width, height int) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.UserDataDir(t.TempDir()),
		// Chromium's singleton socket folder goes in TMPDIR and outlives
		// the browser, which is killed: keep it in the test's folder.
		chromedp.Env("TMPDIR="+t.TempDir()),
		chromedp.WindowSize(width, height),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("lang", "en-US"),
	)
	if runtime.GOOS == "linux" && os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // root: Chromium refuses its sandbox
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// The first action starts the browser; it lives as long as ctx, so
	// this call has no timeout of its own.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), int64(height))); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// do runs steps in the tab, each bounded by browserWait.
func do(t *testing.T, tab context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, browserWait)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v\nthe page:\n%s", what, err, pageText(tab))
	}
}

// get runs one action in the tab and returns its value.
func get[T any](t *testing.T, tab context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, browserWait)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v\nthe page:\n%s", what, err, pageText(tab))
	}
	return v
}

// waitFor evaluates a JavaScript condition in the tab until it is true,
// across navigations (an evaluation that fails, as one during a page's
// load does, is tried again).
func waitFor(t *testing.T, tab context.Context, what, cond string) {
	t.Helper()
	deadline := time.Now().Add(browserWait)
	var err error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(tab, 10*time.Second)
		var ok bool
		ok, err = chromedp.Run(ctx, chromedp.Evaluate[bool](cond))
		cancel()
		if err == nil && ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("waiting for %s: not so after %v (%v)\nthe page:\n%s", what, browserWait, err, pageText(tab))
}

// pageText is the tab's text, for failure messages.
func pageText(tab context.Context) string {
	ctx, cancel := context.WithTimeout(tab, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return s
}

// asking is an `agentctl instance run` whose client waits for an answer.
type asking struct {
	ended chan struct{} // closed once the run ended, out then set
	out   runOutcome
}

type runOutcome struct {
	res rcResult
	rep *fakeReport
}

// askingRun starts `agentctl instance run` of id with the fake client as
// program, whose headless call of ask_user_question (through `mcp serve`)
// waits in the store, and returns once the question is open. The test's
// cleanup answers it, if the test did not, so that the run ends.
func askingRun(ctx context.Context, t *testing.T, e *rcEnv, path, id, question string, choices string) (rcQuestion, *asking) {
	t.Helper()
	env := []string{"FAKECLIENT_ELICIT=cancel", "FAKECLIENT_CALL=ask_user_question_agentctl",
		fmt.Sprintf(`FAKECLIENT_ARGS={"question":%q,"choices":%s}`, question, choices), "FAKECLIENT_TIMEOUT=3m"}
	a := &asking{ended: make(chan struct{})}
	// The run outlives the test's context, for the cleanup to end it.
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rcTimeout)
	go func() {
		defer cancel()
		defer close(a.ended)
		a.out.res, a.out.rep = e.runWithFake(runCtx, path, env, "instance", "run", id, "--prompt", "fix the login page")
	}()
	t.Cleanup(func() {
		select {
		case <-a.ended:
			return
		default:
		}
		e.run(context.Background(), "instance", "answer", id, "--other", "(the test ended)")
		select {
		case <-a.ended:
		case <-time.After(browserWait):
			t.Errorf("the asking run did not end after its question was answered")
		}
	})
	for {
		if qs := e.questions(ctx, id, false); len(qs) == 1 {
			return qs[0], a
		}
		select {
		case <-a.ended:
			t.Fatalf("the run ended before its question reached the store\n%s", a.out.res)
		case <-ctx.Done():
			t.Fatal("no open question appeared")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestWebUIAnswerInBrowser: log in with the URL serve printed, see the
// question the agent is waiting on, answer by clicking a choice, and see
// the agent's call return with it and the run's end arrive on the page
// without a reload; a missing or wrong token sees nothing, and a POST
// without the CSRF token is refused.
func TestWebUIAnswerInBrowser(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	d := startServe(ctx, e)
	login := loginURLOf(t, d)
	rec := e.create(ctx, "--agent", "claude-code", "--name", "ship-it", "--workspace", e.work)
	path := fakeClientOnPath(t, "claude")
	q, run := askingRun(ctx, t, e, path, rec.ID, "Ship the release?", `["yes","no"]`)
	base := "http://" + d.addr

	// No session, then a wrong token: the log-in page, nothing of the
	// instance.
	stranger := newBrowser(t, 1280, 900)
	for _, u := range []string{base + "/", base + "/login?token=agtop_wrongwrongwrong", base + "/ui/instances/" + rec.ID} {
		do(t, stranger, "open "+u, chromedp.Navigate(u), chromedp.WaitVisible(chromedp.CSS("h1")))
		if u != base+"/" {
			waitFor(t, stranger, "the log-in page", `document.querySelector('form[action="/login"] input[name=token][type=password]') !== null`)
		}
		text := pageText(stranger)
		html := get(t, stranger, "the page's HTML", chromedp.Evaluate[string](`document.documentElement.outerHTML`))
		if !strings.Contains(text, "Log in") {
			t.Errorf("%s without a session shows no log-in page:\n%s", u, text)
		}
		for _, secret := range []string{"ship-it", "Ship the release?", e.work, q.ID} {
			if strings.Contains(html, secret) {
				t.Errorf("%s without a session shows %q", u, secret)
			}
		}
		if strings.Contains(u, "wrongwrong") && !strings.Contains(text, "not an operator token in force") {
			t.Errorf("a wrong token's log in does not say so:\n%s", text)
		}
	}

	// The login URL: the browser ends on the instances page, the token no
	// longer in its address.
	tab := newBrowser(t, 1280, 900)
	do(t, tab, "log in", chromedp.Navigate(login))
	waitFor(t, tab, "the instances page", `location.pathname === "/" && document.querySelector("h1") && document.querySelector("h1").textContent === "Instances"`)
	if loc := get(t, tab, "the address", chromedp.Location()); strings.Contains(loc, "token") {
		t.Errorf("after log in the address is %s: it still holds the token", loc)
	}
	if text := pageText(tab); !strings.Contains(text, "ship-it") || !strings.Contains(text, "Ship the release?") {
		t.Fatalf("the instances page lacks the instance or its waiting question:\n%s", text)
	}
	do(t, tab, "open the instance", chromedp.Click(chromedp.CSS(`a.inst`)))
	choice := fmt.Sprintf(`#q-%s button[value="yes"]`, q.ID)
	do(t, tab, "the question's buttons", chromedp.WaitVisible(chromedp.CSS(choice)))
	waitFor(t, tab, "the live stream", `document.getElementById("live-state").textContent.startsWith("Live:")`)
	waitFor(t, tab, "the run's output so far", `document.getElementById("output").textContent.includes("fakeclient: prompt=fix the login page")`)

	// A POST without the session's CSRF token is refused, and answers
	// nothing.
	status := get(t, tab, "a POST without CSRF", chromedp.Evaluate[int](fmt.Sprintf(
		`fetch("/ui/instances/%s/questions/%s/answer", {method: "POST", body: new URLSearchParams({answer: "no"}), headers: {Accept: "application/json"}}).then(r => r.status)`,
		rec.ID, q.ID), chromedp.EvalAwaitPromise))
	if status != 403 {
		t.Errorf("a POST without the CSRF token: %d, want 403", status)
	}
	if qs := e.questions(ctx, rec.ID, false); len(qs) != 1 {
		t.Fatalf("after the refused POST the question is no longer open: %+v", qs)
	}

	// Answer by clicking; the page must not reload from here on.
	do(t, tab, "mark the page", chromedp.Evaluate[chromedp.Void](`window.agentctlNoReload = true`))
	// By keyboard: the focus stays with the question as it moves to the
	// earlier ones (a disabled button lost it to the page's body).
	do(t, tab, "focus yes", chromedp.Focus(chromedp.CSS(choice)))
	do(t, tab, "press Enter", chromedp.KeyEvent("\r"))
	select {
	case <-run.ended:
	case <-ctx.Done():
		t.Fatal("the agent's call did not return after the click")
	}
	o := run.out
	if o.res.code != 0 || o.rep == nil || len(o.rep.Servers) != 1 || !strings.Contains(o.rep.Servers[0].Result, "The person answered: yes") {
		t.Fatalf("the agent's ask_user_question did not return the answer: %+v\n%s", o.rep, o.res)
	}
	waitFor(t, tab, "the question shown answered", fmt.Sprintf(`(function(){var q = document.getElementById("q-%s"); return q !== null && q.dataset.status === "answered" && q.textContent.includes("yes");})()`, q.ID))
	waitFor(t, tab, "the focus on the answered question, in the open box of earlier ones", fmt.Sprintf(
		`(function(){var q = document.getElementById("q-%s"); return q.contains(document.activeElement) && document.getElementById("earlier-box").open;})()`, q.ID))
	waitFor(t, tab, "the run's end among the events", `document.querySelector('#events li[data-status="done"]') !== null`)
	waitFor(t, tab, "the run's end in its summary", `document.getElementById("run").textContent.includes("exit code 0")`)
	waitFor(t, tab, "the run's last output", `document.getElementById("output").textContent.includes("called=ask_user_question_agentctl ok")`)
	waitFor(t, tab, "the status word", `document.getElementById("inst-status").textContent === "done"`)
	if still := get(t, tab, "the mark", chromedp.Evaluate[bool](`window.agentctlNoReload === true`)); !still {
		t.Errorf("the page reloaded: the answer and the events should arrive in place")
	}
	if text := pageText(tab); !strings.Contains(text, "Answered “Ship the release?” with “yes”") {
		t.Errorf("the page does not say the answer was sent:\n%s", text)
	}
	if qs := e.questions(ctx, rec.ID, true); len(qs) != 1 || qs[0].Status != "answered" || qs[0].Answer != "yes" {
		t.Errorf("instance questions --all: %+v, want the question answered yes", qs)
	}
}

// TestWebUIScreenshots renders the instances page and an instance's page
// at 1280 and 390 pixels wide: at 390 nothing may be wider than the
// screen. With -update-screenshots it writes them to docs/ui-*.png.
func TestWebUIScreenshots(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	d := startServe(ctx, e)
	login := loginURLOf(t, d)
	path := fakeClientOnPath(t, "claude", "auggie", "codex")
	// Workspaces with short names, as a person's would be.
	src, err := os.MkdirTemp("", "src-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(src) })
	workspace := func(name string) string {
		dir := filepath.Join(src, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}

	docs := e.create(ctx, "--agent", "auggie", "--name", "docs-refresh", "--workspace", workspace("shop-docs"))
	res, _ := e.runWithFake(ctx, path, []string{"FAKECLIENT_CALL=report_progress",
		`FAKECLIENT_ARGS={"message":"Rewrote the install guide and checked every link","status":"done","percent":100}`},
		"instance", "run", docs.ID, "--prompt", "refresh the docs")
	if res.code != 0 {
		t.Fatalf("the docs run:\n%s", res)
	}
	ci := e.create(ctx, "--agent", "codex", "--name", "flaky-ci", "--workspace", workspace("shop-api"))
	res, _ = e.runWithFake(ctx, path, []string{"FAKECLIENT_CALL=report_progress_agentctl", "FAKECLIENT_EXIT=1",
		`FAKECLIENT_ARGS={"message":"3 tests still fail on CI: TestLogin, TestLogout, TestRefresh","status":"failed"}`},
		"instance", "run", ci.ID, "--prompt", "make CI green")
	if res.code != 1 {
		t.Fatalf("the CI run: want exit 1\n%s", res)
	}
	e.create(ctx, "--agent", "gemini", "--name", "perf-budget", "--workspace", workspace("shop-bench"))
	rec := e.create(ctx, "--agent", "claude-code", "--name", "fix-login", "--workspace", workspace("shop-web"))
	askingRun(ctx, t, e, path, rec.ID, "The login test needs a database. Use the staging one?", `["Yes, staging","No, a fresh one"]`)

	for _, size := range []struct {
		name          string
		width, height int
	}{{"1280", 1280, 900}, {"390", 390, 844}} {
		browser := newBrowser(t, size.width, size.height)
		do(t, browser, "log in", chromedp.Navigate(login))
		waitFor(t, browser, "the instances page", `location.pathname === "/" && document.querySelectorAll("a.inst").length === 4`)
		shoot(t, browser, "list", size.name, size.width)
		do(t, browser, "open the instance", chromedp.Navigate("http://"+d.addr+"/ui/instances/"+rec.ID))
		waitFor(t, browser, "the live page", `document.getElementById("live-state").textContent.startsWith("Live:") && document.getElementById("output").textContent.includes("fakeclient")`)
		shoot(t, browser, "instance", size.name, size.width)
	}
}

// shoot checks the tab's page at width (nothing wider than the window)
// and takes its screenshot, written to docs/ui-PAGE-SIZE.png with
// -update-screenshots.
func shoot(t *testing.T, tab context.Context, page, size string, width int) {
	t.Helper()
	if w := get(t, tab, "the page's width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > width {
		t.Errorf("the %s page at %d px is %d px wide: it must fit (one column under 600 px)", page, width, w)
	}
	// Every field has a label a screen reader reads out.
	unlabelled := get(t, tab, "the fields' labels", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("input:not([type=hidden]), select, textarea")).filter(el => el.labels.length === 0 && !el.getAttribute("aria-label")).map(el => el.outerHTML)`))
	if len(unlabelled) > 0 {
		t.Errorf("the %s page has fields without a label: %q", page, unlabelled)
	}
	shot := get(t, tab, "the screenshot", chromedp.CaptureScreenshot())
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	if got := img.Bounds().Dx(); got != width {
		t.Errorf("the %s screenshot is %d px wide, want %d", page, got, width)
	}
	if !*updateScreenshots {
		return
	}
	_, file, _, _ := runtime.Caller(0)
	out := filepath.Join(filepath.Dir(file), "..", "..", "docs", "ui-"+page+"-"+size+".png")
	if err := os.WriteFile(out, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d KiB)", out, len(shot)>>10)
}

// TestWebUILiveThroughAProxyRestart: behind a reverse proxy (serve
// --base-url, the documented TLS set-up), the page's live stream comes
// back after the daemon restarts, going on where it was: the browser gives
// up on the proxy's 502 while the daemon is down, and the page's script
// starts a new stream. Before, the page said "reload the page" for good.
func TestWebUILiveThroughAProxyRestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	proxyLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	proxyURL := "http://" + proxyLn.Addr().String()
	d := startServe(ctx, e, "--base-url", proxyURL)
	target, _ := url.Parse("http://" + d.addr)
	proxy := &http.Server{Handler: &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target); r.SetXForwarded() },
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
	}}
	go proxy.Serve(proxyLn)
	defer proxy.Close()
	login := loginURLOf(t, d)
	rec := e.create(ctx, "--agent", "claude-code", "--name", "behind", "--workspace", e.work)

	tab := newBrowser(t, 1280, 900)
	do(t, tab, "log in through the proxy", chromedp.Navigate(login))
	waitFor(t, tab, "the instances page", `location.pathname === "/" && document.querySelector("h1") && document.querySelector("h1").textContent === "Instances"`)
	do(t, tab, "open the instance", chromedp.Navigate(proxyURL+"/ui/instances/"+rec.ID))
	waitFor(t, tab, "the live stream", `document.getElementById("live-state").textContent.startsWith("Live:")`)

	report := func(msg string) {
		t.Helper()
		st, err := instance.Open(ctx, e.state)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, err := st.AddEvent(ctx, instance.Event{InstanceID: rec.ID, Tool: "report_progress", Status: instance.StatusRunning, Message: msg}); err != nil {
			t.Fatal(err)
		}
	}
	report("before the restart")
	waitFor(t, tab, "the event before the restart", `document.getElementById("events").textContent.includes("before the restart")`)

	if code := d.stop(); code != 0 {
		t.Fatalf("serve stopped with %d", code)
	}
	time.Sleep(4 * time.Second) // the browser tries again meanwhile, and the proxy answers 502
	startServe(ctx, e, "--base-url", proxyURL, "--listen", d.addr)
	report("after the restart")
	waitFor(t, tab, "the event after the restart, live", `document.getElementById("events").textContent.includes("after the restart") && document.getElementById("live-state").textContent.startsWith("Live:")`)
	if n := get(t, tab, "how often the first event shows", chromedp.Evaluate[int](
		`document.getElementById("events").textContent.split("before the restart").length - 1`)); n != 1 {
		t.Errorf("the event before the restart shows %d times; the new stream must go on where the old one was", n)
	}
}
