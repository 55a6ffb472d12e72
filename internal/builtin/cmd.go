package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/skillbus/skillbus/pkg/tool"
)

// RunResult is cmd.run's reply. ExitCode is the process's exit status (-1
// when it was killed); Truncated says stdout or stderr went past the limit;
// Duration is a Go duration string.
type RunResult struct {
	Command   string `json:"command"`
	ExitCode  int    `json:"exit_code"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	Truncated bool   `json:"truncated,omitempty"`
	Duration  string `json:"duration"`
}

// limitedBuffer keeps the first max bytes written and counts the rest.
type limitedBuffer struct {
	mu      sync.Mutex // mu guards buf and dropped (stdout and stderr may share one)
	buf     bytes.Buffer
	max     int
	dropped int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	room := b.max - b.buf.Len()
	if room >= len(p) {
		b.buf.Write(p)
	} else {
		if room > 0 {
			b.buf.Write(p[:room])
		}
		b.dropped += len(p) - max(room, 0)
	}
	return len(p), nil
}

// run is cmd.run: it runs one allow-listed command directly (no shell),
// in a directory under the root, with a timeout and capped output. With
// check (the default) a non-zero exit status is a tool error (code "500")
// carrying the end of stderr; with check false it is returned in ExitCode.
func (p *Provider) run(ctx context.Context, args json.RawMessage) (any, error) {
	var in RunArgs
	if err := decodeArgs(args, &in); err != nil {
		return nil, err
	}
	if in.Command == "" {
		return nil, tool.Errorf("400", "bad arguments: command is required, one of: %s", strings.Join(p.cfg.AllowCommands, ", "))
	}
	if !slices.Contains(p.cfg.AllowCommands, in.Command) {
		return nil, tool.Errorf("403", "command %q is not on the allow-list (%s): the provider's operator allows commands with --allow-cmd", in.Command, strings.Join(p.cfg.AllowCommands, ", "))
	}
	timeout := p.cfg.CommandTimeout
	if in.Timeout != "" {
		d, err := time.ParseDuration(in.Timeout)
		if err != nil || d <= 0 {
			return nil, tool.Errorf("400", "bad arguments: timeout %q is not a positive Go duration such as \"10s\"", in.Timeout)
		}
		timeout = min(timeout, d)
	}
	dir, err := p.hostDir(in.Dir)
	if err != nil {
		return nil, err
	}
	bin, err := exec.LookPath(in.Command)
	if err != nil {
		return nil, tool.Errorf("503", "allowed command %q is not installed on the provider's host: %v", in.Command, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := exec.CommandContext(ctx, bin, in.Args...)
	c.Dir = dir
	c.Stdin = strings.NewReader(in.Stdin)
	stdout := &limitedBuffer{max: p.cfg.MaxOutputBytes}
	stderr := &limitedBuffer{max: p.cfg.MaxOutputBytes}
	c.Stdout, c.Stderr = stdout, stderr
	c.WaitDelay = time.Second // a child holding the pipes open does not hang the call
	ownGroup(c)               // a cancelled call kills the command's children too
	start := time.Now()
	runErr := runTied(c) // and dies with the provider, where the OS allows
	res := RunResult{
		Command:   in.Command,
		ExitCode:  c.ProcessState.ExitCode(),
		Stdout:    strings.ToValidUTF8(stdout.buf.String(), "\uFFFD"),
		Stderr:    strings.ToValidUTF8(stderr.buf.String(), "\uFFFD"),
		Truncated: stdout.dropped > 0 || stderr.dropped > 0,
		Duration:  time.Since(start).Round(time.Millisecond).String(),
	}
	if c.ProcessState == nil {
		res.ExitCode = -1
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, tool.Errorf("504", "command %q ran past its timeout of %v and was killed", in.Command, timeout)
	}
	var ee *exec.ExitError
	if runErr != nil && !errors.As(runErr, &ee) {
		return nil, tool.Errorf("500", "command %q could not run: %v", in.Command, runErr)
	}
	if res.ExitCode != 0 && (in.Check == nil || *in.Check) {
		return nil, tool.Errorf("500", "command %q exited with status %d: %s (pass \"check\": false to get the output anyway)", in.Command, res.ExitCode, lastLine(res.Stderr))
	}
	return res, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if s == "" {
		return "no error output"
	}
	return clipText(s, 300)
}

// hostDir resolves a working directory under the root to a host path,
// symlinks resolved, refusing one that lands outside the root.
func (p *Provider) hostDir(d string) (string, error) {
	name, err := local(d)
	if err != nil {
		return "", err
	}
	fi, err := p.root.Stat(name)
	if err != nil {
		return "", fsError(name, err)
	}
	if !fi.IsDir() {
		return "", tool.Errorf("400", "dir %q is not a directory", name)
	}
	host, err := filepath.EvalSymlinks(filepath.Join(p.rootAbs, filepath.FromSlash(name)))
	if err != nil {
		return "", fsError(name, err)
	}
	rel, err := filepath.Rel(p.rootAbs, host)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return "", tool.Errorf("403", "dir %q leads outside the tool root", name)
	}
	if _, err := os.Stat(host); err != nil {
		return "", fsError(name, err)
	}
	return host, nil
}
