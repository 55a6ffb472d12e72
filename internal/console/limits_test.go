package console_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/console"
)

// TestLimits: with MaxStreams 2 a third event stream is answered 503
// naming --max-streams (and one is opened again once a stream ends); a
// POST body trickled a byte at a time is answered 408 once BodyTimeout
// has passed.
func TestLimits(t *testing.T) {
	e := start(t, console.Config{MaxStreams: 2, BodyTimeout: 500 * time.Millisecond})
	a := openSSE(t, e.url+"api/stream")
	openSSE(t, e.url+"api/stream")
	// A stream that is served would never end: read for 5 s at most.
	res, err := (&http.Client{Timeout: 5 * time.Second}).Get(e.url + "api/stream")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "--max-streams") || !strings.Contains(string(body), "2 event streams") {
		t.Errorf("a third stream: %s %q; want 503 naming the limit 2 and --max-streams", res.Status, body)
	}
	a.res.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := http.Get(e.url + "api/stream")
		if err != nil {
			t.Fatal(err)
		}
		ok := res.StatusCode == http.StatusOK
		res.Body.Close()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no stream 10 s after one was closed: %s", res.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}

	u, _ := url.Parse(e.url)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	payload := `{"messages":[{"role":"user","content":"hello there, a slow request"}]}`
	fmt.Fprintf(conn, "POST /api/preview HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%s: 1\r\nContent-Length: %d\r\n\r\n", u.Host, console.ActionHeader, len(payload))
	start := time.Now()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for i := 0; i < len(payload); i++ {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if _, err := conn.Write([]byte{payload[i]}); err != nil {
				return
			}
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a trickled body after %s: %v", time.Since(start), err)
	}
	rb, _ := io.ReadAll(resp.Body)
	took := time.Since(start)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(rb), "--body-timeout") {
		t.Errorf("trickled body: %s %q; want 408 naming --body-timeout", resp.Status, rb)
	}
	if took > 5*time.Second {
		t.Errorf("a trickled body held the request %s; want it ended about 500ms after its headers", took)
	}
	t.Logf("trickled body answered %s after %s", resp.Status, took.Round(time.Millisecond))
}
