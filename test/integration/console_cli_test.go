package integration

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/auth"
	"github.com/skillbus/skillbus/internal/cli"
)

// consoleGet fetches a console URL (with a bearer token when given) and
// returns the status and body.
func consoleGet(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestCLIConsole: `skillbus dev` prints the console's URL and serves it;
// `skillbus ui` serves it against NATS_URL, on loopback without a token
// and elsewhere only with one.
func TestCLIConsole(t *testing.T) {
	defs := t.TempDir()
	cliCopy(t, "examples/sequences/project-survey.seq.yaml", defs)
	stdout, stderr, stop := cliBackground(t, "dev", "--port", "0", "--ui-port", "0", "--data", t.TempDir(), "--dir", defs, "--tools-root", defs, "--agent", "")
	natsRe := regexp.MustCompile(`NATS_URL=(nats://[0-9.:]+)`)
	uiRe := regexp.MustCompile(`console: +(http://127\.0\.0\.1:[0-9]+/)`)
	cliEventually(t, "dev to print the console's URL", func() bool {
		return uiRe.MatchString(stdout.String()) && strings.Contains(stdout.String(), "Press Ctrl-C")
	})
	ui := uiRe.FindStringSubmatch(stdout.String())[1]
	nurl := natsRe.FindStringSubmatch(stdout.String())[1]
	cliEventually(t, "the dev console to list project-survey", func() bool {
		code, body := consoleGet(t, ui+"api/seqs", "")
		return code == 200 && strings.Contains(body, `"project-survey"`)
	})
	if code, body := consoleGet(t, ui, ""); code != 200 || !strings.Contains(body, "skillbus console") {
		t.Errorf("dev console page = %d", code)
	}

	t.Setenv(cli.EnvNATSURL, nurl)
	uiOut, _, uiStop := cliBackground(t, "ui", "--listen", "127.0.0.1:0")
	lineRe := regexp.MustCompile(`skillbus console: (http://127\.0\.0\.1:[0-9]+/)\n`)
	uiOut.waitUntil(t, "ui to print its URL", lineRe.MatchString)
	u := lineRe.FindStringSubmatch(uiOut.String())[1]
	if code, body := consoleGet(t, u+"api/seqs", ""); code != 200 || !strings.Contains(body, `"project-survey"`) {
		t.Errorf("ui api/seqs = %d %s", code, body)
	}
	if code := uiStop(); code != cli.ExitOK {
		t.Errorf("ui stopped with %d; want 0", code)
	}

	// Not loopback: a token is required, from SKILLBUS_TOKEN or
	// --token-file, never the command line, and never printed.
	if code, _, errOut := cliRun(t, "ui", "--listen", "0.0.0.0:0"); code != cli.ExitUsage || !strings.Contains(errOut, "needs a token: put one in SKILLBUS_TOKEN or in a file given with --token-file") {
		t.Errorf("ui --listen 0.0.0.0:0 without a token = %d, %q; want 2 saying where to put one", code, errOut)
	}
	if code, _, errOut := cliRun(t, "ui", "--listen", "0.0.0.0:0", "--token", "x"); code != cli.ExitUsage || !strings.Contains(errOut, "--token") {
		t.Errorf("ui --token on the command line = %d, %q; want 2 (the flag is gone)", code, errOut)
	}
	const secret = "a-console-token-of-32-characters"
	tokFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokOut, _, tokStop := cliBackground(t, "ui", "--listen", "0.0.0.0:0", "--token-file", tokFile)
	tokRe := regexp.MustCompile(`skillbus console: (http://localhost:[0-9]+/) \(log in with the token\)`)
	tokOut.waitUntil(t, "ui to print its URL", tokRe.MatchString)
	m := tokRe.FindStringSubmatch(tokOut.String())
	if strings.Contains(tokOut.String(), secret) {
		t.Errorf("ui printed its token:\n%s", tokOut.String())
	}
	if code, _ := consoleGet(t, m[1]+"api/runs", ""); code != http.StatusUnauthorized {
		t.Errorf("ui on 0.0.0.0 without the token = %d; want 401", code)
	}
	if code, _ := consoleGet(t, m[1]+"api/runs", secret); code != 200 {
		t.Errorf("ui on 0.0.0.0 with the token = %d; want 200", code)
	}
	tokStop()
	t.Setenv("SKILLBUS_TOKEN", secret)
	envOut, _, envStop := cliBackground(t, "ui", "--listen", "0.0.0.0:0")
	envOut.waitUntil(t, "ui with SKILLBUS_TOKEN to print its URL", tokRe.MatchString)
	if code, _ := consoleGet(t, tokRe.FindStringSubmatch(envOut.String())[1]+"api/runs", secret); code != 200 {
		t.Errorf("ui with SKILLBUS_TOKEN, with the token = %d; want 200", code)
	}
	envStop()
	t.Setenv("SKILLBUS_TOKEN", "")

	if code, _, errOut := cliRun(t, "ui", "--listen", "nonsense"); code != cli.ExitUsage || !strings.Contains(errOut, "HOST:PORT") {
		t.Errorf("ui --listen nonsense = %d, %q; want 2", code, errOut)
	}
	if code, _, errOut := cliRun(t, "ui", "--listen", "127.0.0.1:abc"); code != cli.ExitUsage || !strings.Contains(errOut, `the port "abc" is not a number`) {
		t.Errorf("ui --listen 127.0.0.1:abc = %d, %q; want 2 naming the port", code, errOut)
	}
	t.Setenv("SKILLBUS_TOKEN", "short")
	if code, _, errOut := cliRun(t, "ui", "--listen", "0.0.0.0:0"); code != cli.ExitUsage || !strings.Contains(errOut, "use at least 16 random characters") {
		t.Errorf("ui --listen 0.0.0.0:0 with SKILLBUS_TOKEN=short = %d, %q; want 2: a guessable token on a public address", code, errOut)
	}
	t.Setenv("SKILLBUS_TOKEN", "")
	if code := stop(); code != cli.ExitOK {
		t.Errorf("dev stopped with %d; want 0", code)
	}
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if l != "" && !strings.HasPrefix(l, "skillbus dev: ") {
			t.Errorf("dev stderr line %q", l)
		}
	}
}

// TestUIPartialCreds: `skillbus ui` with credentials that lack some
// permissions (the reader role's: no RUNS watch, no starting or cancelling
// runs) starts, says in its log what the server refuses, serves what they
// allow and names up front what they do not, and stays ready until Ctrl-C
// (exit 0). Before, it exited 1 after about 32 s ("ui failed"), against
// docs/console.md. What made it exit — servicecmd's refusal patience — is
// off for a service that shows its refusals (Spec.ShowsRefusals), and
// TestRefusedSubscriptionShown (internal/servicecmd) checks that such a
// service runs on past ten times an injected patience; here, that ui is
// one: a service without ShowsRefusals is not ready while a subscription
// is refused, so /readyz answering 200 over a few seconds of refusal shows
// it, without waiting out the 30 s default.
func TestUIPartialCreds(t *testing.T) {
	if testing.Short() {
		t.Skip("watches the console for a few seconds")
	}
	e := authStart(t)
	e.as(t, auth.RoleReader)
	uiOut, uiErr, uiStop := cliBackground(t, "ui", "--listen", "127.0.0.1:0", "--health-addr", "127.0.0.1:0")
	lineRe := regexp.MustCompile(`skillbus console: (http://127\.0\.0\.1:[0-9]+/)\n`)
	uiOut.waitUntil(t, "ui to print its URL", lineRe.MatchString)
	u := lineRe.FindStringSubmatch(uiOut.String())[1]
	// The refusal is in the ready line, or — when the console subscribed
	// after its start — in a line of its own.
	uiErr.waitUntil(t, "the log to say what is refused", func(e string) bool {
		return (strings.Contains(e, "ready without some of its subscriptions") || strings.Contains(e, "refuses a subscription; working on without it")) && strings.Contains(e, "$KV.RUNS.>")
	})
	code, body := consoleGet(t, u+"api/info", "")
	if code != 200 || !strings.Contains(body, `"what":"start"`) || !strings.Contains(body, "skillbus.seq.run") || !strings.Contains(body, "role reader") {
		t.Errorf("ui api/info = %d %.800s; want the limits of the reader's creds (starting runs, naming skillbus.seq.run and the role)", code, body)
	}
	healthRe := regexp.MustCompile(`health endpoint listening.*addr=(\S+)`)
	m := healthRe.FindStringSubmatch(uiErr.String())
	if m == nil {
		t.Fatalf("no health address in the log:\n%s", uiErr)
	}
	// The behaviour is a span: ready and serving over 3 s of refusal.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if code, body := consoleGet(t, u+"api/seqs", ""); code != 200 || !strings.Contains(body, `"project-survey"`) {
			t.Fatalf("ui api/seqs = %d %.300s while running with the reader's creds\nstderr: %s", code, body, uiErr)
		}
		if code, _ := consoleGet(t, "http://"+m[1]+"/readyz", ""); code != 200 {
			t.Fatalf("/readyz = %d; want 200 (the console serves what the creds allow)\nstderr: %s", code, uiErr)
		}
	}
	if strings.Contains(uiErr.String(), "ui failed") {
		t.Errorf("ui logged a failure:\n%s", uiErr)
	}
	if code := uiStop(); code != cli.ExitOK {
		t.Errorf("ui stopped with %d; want 0\nstderr: %s", code, uiErr)
	}
}
