package integration

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

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
	cliEventually(t, "ui to print its URL", func() bool { return lineRe.MatchString(uiOut.String()) })
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
	cliEventually(t, "ui to print its URL", func() bool { return tokRe.MatchString(tokOut.String()) })
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
	cliEventually(t, "ui with SKILLBUS_TOKEN to print its URL", func() bool { return tokRe.MatchString(envOut.String()) })
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
