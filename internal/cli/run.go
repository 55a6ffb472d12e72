package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/skillbus/skillbus/internal/builtin"
	"github.com/skillbus/skillbus/internal/devstack"
	"github.com/skillbus/skillbus/internal/errtext"
	"github.com/skillbus/skillbus/internal/natsconn"
	"github.com/skillbus/skillbus/internal/registry"
	"github.com/skillbus/skillbus/internal/runargs"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

func runCommand() command {
	return command{
		summary: "run a sequence (a file or a stored name) and show its progress and result",
		usage: `Usage: skillbus run SEQUENCE [--arg KEY=VALUE ...] [--args-file FILE] [-o json|yaml] [--local] [flags]

Runs a sequence and waits for it, showing each group and call as it
finishes (a live line on a terminal, plain lines otherwise, on stderr), then
prints the result on stdout: a table of groups and calls and the outputs, or
with -o json (--json) or -o yaml the run's state as stored in the RUNS bucket.

SEQUENCE is a sequence file (*.seq.yaml, *.seq.yml, *.seq.json) or the name of
a stored sequence (taken in Unicode NFC, as the registry stores names).

Without NATS_URL (or with --local), skillbus starts everything in this
process for the run — an embedded NATS server with a temporary store (or
--data DIR), the registry, the seqworker and the built-in tools (fs.*,
text.render; cmd.run with --allow-cmd) rooted at --tools-root — so it works
on a fresh machine. With NATS_URL (or --context) it submits the run to that
cluster, whose own tools run it: --tools-root, --allow-cmd and --data are
then refused rather than ignored (unset NATS_URL, or add --local); and the
connection flags are refused with --local. Ctrl-C then stops waiting but
not the run (follow it with ` + "`skillbus watch RUN_ID`" + `). While the seqworkers
restart, run keeps waiting (up to 2 minutes without any) and says so; an
interrupted run shows where it stopped and where it resumed.

Flags:
  --arg KEY=VALUE     a run argument (repeatable)
  --args-file FILE    a JSON object of run arguments (- reads standard input)
  -o json|yaml        print the run state as JSON or YAML instead of the
                      table (--json: -o json); with --detach, the
                      seqworker's reply {"v": 1, "run_id": ID}
  --quiet             no progress lines
  --detach            print the run id on stdout and exit at once (needs
                      NATS_URL); follow it with skillbus watch RUN_ID or
                      skillbus runs show RUN_ID
  --run-id ID         the run id (letters, digits, - and _); default a new one;
                      an idempotency key: the same request again gives the
                      same run; another sequence or other arguments under an
                      id already used are refused
  --local             run in this process even when NATS_URL is set
  --tools-root DIR    in-process only: the built-in tools' root (default .)
  --allow-cmd NAMES   in-process only: commands cmd.run may run (comma list)
  --data DIR          in-process only: keep the JetStream store in DIR

` + argsUsage + `
Examples:
  skillbus run examples/sequences/project-survey.seq.yaml --arg root=.
  skillbus run project-survey --arg root=services/api --json     # stored, with NATS_URL
  skillbus run nightly-deps-audit --args-file args.json
  jq -n '{root: "."}' | skillbus run project-survey --args-file -

Exit codes: 0 the run succeeded, 1 the run failed (or could not be started),
2 bad command line (unknown flag, bad --arg, no such file).
`,
		run:      runRun,
		operands: operandSeqOrFile,
	}
}

func runRun(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "run", runCommand)
	var argv stringList
	var allow stringList
	allow.split = true
	fs.Var(&argv, "arg", "run argument KEY=VALUE (repeatable)")
	argsFile := fs.String("args-file", "", "JSON object of run arguments")
	out := outputFlags(fs, "json", "yaml")
	quiet := fs.Bool("quiet", false, "no progress lines")
	runID := fs.String("run-id", "", "run id")
	detach := fs.Bool("detach", false, "print the run id and exit without waiting (needs NATS_URL)")
	toolsRoot := fs.String("tools-root", ".", "built-in tools' root (in-process only)")
	fs.Var(&allow, "allow-cmd", "commands cmd.run may run (in-process only)")
	dataDir := fs.String("data", "", "JetStream store directory (in-process only)")
	local := fs.Bool("local", false, "run in this process even with NATS_URL set")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	remote := remote(env) && !*local
	if code := checkRunPlace(env, fs, remote, *local); code >= 0 {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintf(env.Stderr, "skillbus run: give exactly one SEQUENCE (a file or a stored name), got %d\n%s\n", len(pos), helpHint("run"))
		return ExitUsage
	}
	if *runID != "" {
		if err := events.CheckRunID(*runID); err != nil {
			fmt.Fprintf(env.Stderr, "skillbus run: --run-id: %s\n", errtext.Error(err))
			return ExitUsage
		}
	}
	target := pos[0]
	if *detach && !remote {
		fmt.Fprintf(env.Stderr, "skillbus run: --detach needs NATS_URL (and no --local): without it the run happens inside this process, which must wait for it\n")
		return ExitUsage
	}

	// The sequence: a file is parsed here, so its problems are reported
	// before anything starts.
	var s *seq.Sequence
	var inline json.RawMessage
	if st, err := os.Stat(target); err == nil && !st.IsDir() {
		data, code := readSequenceFile(env, "run", target)
		if code >= 0 {
			return code
		}
		s, err = seq.ParseFile(target, data)
		if err != nil {
			printSeqProblems(env, target, err)
			fmt.Fprintf(env.Stderr, "skillbus run: %s is not a valid sequence; fix the problems above (`skillbus validate %s` checks it)\n", target, target)
			return ExitFailure
		}
		if inline, err = seq.Encode(s); err != nil {
			fmt.Fprintf(env.Stderr, "skillbus run: %v\n", err)
			return ExitFailure
		}
	} else if looksLikeFile(target) {
		fmt.Fprintf(env.Stderr, "skillbus run: no sequence file %s (%v); give a *.seq.yaml or *.seq.json file, or the name of a stored sequence\n", target, statErr(err, st))
		return ExitUsage
	} else if !remote {
		fmt.Fprintf(env.Stderr, "skillbus run: %q is not a file here, and running a stored sequence by name needs NATS_URL (start `skillbus dev --dir DIR` and export the URL it prints), or give the sequence file's path\n", target)
		return ExitUsage
	} else {
		target = seq.NormalizeName(target)
	}
	af, err := readArgsFile(env, *argsFile)
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus run: %v\n", err)
		return ExitUsage
	}
	noteShadowed(env, "run", af, argv.values)
	if s != nil {
		// Arguments are checked before a server starts.
		if _, err := buildArgs(s.Signature, af, argv.values, true); err != nil {
			fmt.Fprintf(env.Stderr, "skillbus run: %v\n", err)
			return ExitUsage
		}
	}

	var nc *nats.Conn
	if remote {
		if nc, err = connect(env, "run"); err != nil {
			fmt.Fprintf(env.Stderr, "skillbus run: %v\n", err)
			return connectExit(err)
		}
		defer drainWait(nc, 10*time.Second)
	} else {
		tools := builtin.Config{Root: *toolsRoot, AllowCommands: allow.values}
		if code := checkBuiltin(env, "run", "tools-root", tools); code >= 0 {
			return code
		}
		if s != nil && len(allow.values) == 0 && callsTool(s, "cmd.run") {
			fmt.Fprintln(env.Stderr, "skillbus run: note: this sequence calls cmd.run, which runs in this process only for the commands given with --allow-cmd (for example --allow-cmd git,go); without it, its calls find no provider")
		}
		stack, err := devstack.Start(ctx, devstack.Config{
			DataDir: *dataDir,
			Tools:   tools,
		})
		if err != nil {
			if ctx.Err() != nil {
				fmt.Fprintln(env.Stderr, "skillbus run: interrupted while starting the in-process stack; nothing ran")
				return ExitFailure
			}
			fmt.Fprintf(env.Stderr, "skillbus run: start the in-process stack: %s\n", errtext.Error(err))
			return ExitFailure
		}
		defer func() {
			grace := 10 * time.Second
			if ctx.Err() != nil {
				// Interrupted: nobody waits for the run any more, so its
				// tools are cancelled at once (cmd.run kills its command)
				// and the process exits promptly.
				grace = 200 * time.Millisecond
			}
			stopCtx, cancel := context.WithTimeout(context.Background(), grace)
			defer cancel()
			_ = stack.Stop(stopCtx)
		}()
		if nc, err = nats.Connect(stack.URL(), nats.Name("skillbus run")); err != nil {
			fmt.Fprintf(env.Stderr, "skillbus run: %v\n", err)
			return ExitFailure
		}
		defer nc.Close()
		if sig := signalsOf(s); len(sig) > 0 {
			// Only this process's own server can reach the run: say where.
			fmt.Fprintf(env.Stderr, "skillbus run: note: this run waits for the signal(s) %s; its NATS server is this process's own, so signal it from another shell with NATS_URL=%s skillbus runs signal RUN_ID NAME (the waiting line below names the run id)\n",
				strings.Join(sig, ", "), stack.URL())
		}
	}
	if s == nil {
		var raw json.RawMessage
		if err := request(ctx, nc, registry.SubjectSeqGet, registry.NameRequest{Name: target}, &raw); err != nil {
			fmt.Fprintf(env.Stderr, "skillbus run: sequence %q: %v\n", target, describe(err, storedSeqHint(ctx, nc, target)))
			return ExitFailure
		}
		if s, err = seq.Decode(raw); err != nil {
			fmt.Fprintf(env.Stderr, "skillbus run: stored sequence %q cannot be read: %v\n", target, err)
			return ExitFailure
		}
	}
	runArgs, err := buildArgs(s.Signature, af, argv.values, true)
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus run: %v\n", err)
		return ExitUsage
	}
	id := *runID
	if id == "" {
		id = "run-" + nuid.Next()
	}
	st, code := submitAndWait(ctx, env, nc, s, inline, runArgs, af, id, !*quiet, remote, *detach, out)
	if st == nil {
		return code
	}
	if !out.Structured(env.Stdout, st) {
		printRunState(env.Stdout, st, s)
	}
	if st.Status != events.StatusSucceeded {
		if out.format == "" {
			fmt.Fprintf(env.Stderr, "skillbus run: run %s %s: %s\n", st.RunID, st.Status, st.Error)
		}
		return ExitFailure
	}
	return ExitOK
}

// checkRunPlace refuses the flags that the place the run happens would
// ignore (issue 12 §10: no flag is silently ignored): the in-process stack's
// --tools-root, --allow-cmd and --data when the run goes to a cluster (its
// tools are the cluster's), and the connection flags when it runs in this
// process (--local, or neither NATS_URL nor --context). It returns the exit
// code of a refusal, or -1.
func checkRunPlace(env Env, fs *flag.FlagSet, remote, local bool) int {
	if remote {
		if f := givenAny(fs, "tools-root", "allow-cmd", "data"); f != "" {
			src := "NATS_URL is set"
			if s := connSettings(env); s.URL.V == "" {
				src = "a nats context is given (" + s.Context.Source + ")"
			}
			fmt.Fprintf(env.Stderr, "skillbus run: %s only applies to a run in this process, but %s, so the run goes to that cluster and its own tools run it (%s would be ignored); "+
				"to run here with %s, unset NATS_URL (and NATS_CONTEXT) or add --local; to run on the cluster, leave %s out\n", f, src, f, f, f)
			return ExitUsage
		}
		return -1
	}
	if local {
		if f := givenAny(fs, natsconn.FlagNames()...); f != "" {
			fmt.Fprintf(env.Stderr, "skillbus run: %s and --local contradict each other: --local runs in this process with its own NATS server, so %s would be ignored; leave one out\n", f, f)
			return ExitUsage
		}
		return -1
	}
	return connFlagsUnused(env, "run", fs, "the run would happen in this process")
}

// connFlagsUnused refuses connection flags (--creds, --nkey, --tls-*)
// given to a command that, with neither NATS_URL nor --context, runs on an
// embedded NATS server of its own (what says how): they would be ignored.
// It returns the exit code of a refusal, or -1.
func connFlagsUnused(env Env, cmd string, fs *flag.FlagSet, what string) int {
	if remote(env) {
		return -1
	}
	if f := givenAny(fs, natsconn.FlagNames()...); f != "" {
		fmt.Fprintf(env.Stderr, "skillbus %s: %s is a NATS connection setting, but no NATS_URL (or --context) says which cluster to use, so %s and %s would be ignored; set NATS_URL, or leave %s out\n", cmd, f, what, f, f)
		return ExitUsage
	}
	return -1
}

// submitAndWait submits the run, shows its progress and returns its final
// state (nil with an exit code when it could not be followed to the end).
// It keeps waiting across seqworker restarts (client.Wait), saying on
// stderr what it waits for; detach returns right after the submission.
func submitAndWait(ctx context.Context, env Env, nc *nats.Conn, s *seq.Sequence, inline json.RawMessage, args map[string]json.RawMessage, file *runargs.File, id string, showProgress, remote, detach bool, out *output) (*events.RunState, int) {
	c, err := client.New(nc, client.WithTimeout(requestTimeout))
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus run: %v\n", err)
		return nil, ExitFailure
	}
	rawArgs, _ := json.Marshal(args)
	req := events.SeqRunRequest{RunID: id, Args: rawArgs}
	if inline != nil {
		req.Inline = inline
	} else {
		req.Sequence = s.Name
	}
	var pr *progress
	if showProgress && !detach {
		pr = newProgress(env.Stderr, s, id)
	}
	b, _ := json.Marshal(req)
	if err := checkPayload(nc, "the run request", len(b), file); err != nil {
		fmt.Fprintf(env.Stderr, "skillbus run: the run was not sent: %v\n", err)
		return nil, ExitFailure
	}
	if _, err := c.Start(ctx, req); err != nil {
		fmt.Fprintf(env.Stderr, "skillbus run: the run was not accepted: %v\n", describeClient(err, ""))
		return nil, ExitFailure
	}
	if detach {
		if !out.Structured(env.Stdout, events.SeqRunReply{V: 1, RunID: id}) {
			fmt.Fprintln(env.Stdout, id)
		}
		return nil, ExitOK
	}
	if pr != nil {
		pr.start()
		defer pr.stop()
	}
	st, err := c.Wait(ctx, id, client.WaitOptions{
		OnEvent: func(ev *events.RunEvent) {
			if pr == nil {
				return
			}
			switch ev.Kind {
			case events.RunGroup:
				pr.group(ev)
			case events.RunInterrupted, events.RunResumed, events.RunCancelling, events.RunWaiting, events.RunSignalled:
				var cur *events.RunState
				if ev.Kind == events.RunResumed {
					// Groups finished before the interruption whose events
					// were missed are printed from the checkpoint first
					// (only those up to the resume: progress.event).
					cur, _ = c.Status(ctx, id)
				}
				pr.event(ev, cur)
			}
		},
		OnWaiting: func(text string) {
			if text != "" {
				if pr != nil {
					pr.note("skillbus run: " + text)
				} else {
					fmt.Fprintf(env.Stderr, "skillbus run: %s\n", text)
				}
			}
		},
	})
	if err != nil {
		if pr != nil {
			pr.stop()
		}
		switch {
		case ctx.Err() != nil && remote:
			fmt.Fprintf(env.Stderr, "skillbus run: stopped waiting; run %s goes on in the cluster: follow it with `skillbus watch %s`\n", id, id)
		case ctx.Err() != nil:
			fmt.Fprintf(env.Stderr, "skillbus run: interrupted; run %s was stopped with the in-process stack\n", id)
		default:
			fmt.Fprintf(env.Stderr, "skillbus run: %v\n", err)
		}
		return nil, ExitFailure
	}
	if pr != nil {
		pr.finish(st)
	}
	if len(st.SlotRefs) > 0 {
		// Large outputs live in the object store: read them back to show.
		if slots, err := c.Slots(ctx, st); err == nil {
			st.Slots = slots
		} else {
			fmt.Fprintf(env.Stderr, "skillbus run: large outputs not read: %v\n", err)
		}
	}
	return st, ExitOK
}

// describeClient turns a pkg/client error into text, adding a hint for
// not-found and naming what to start when no seqworker answers.
func describeClient(err error, hint404 string) string {
	switch {
	case errors.Is(err, client.ErrNotFound) && hint404 != "" && !strings.Contains(err.Error(), "skillbus "):
		return errtext.Error(err) + "; " + hint404
	case errors.Is(err, client.ErrUnavailable) && !errors.As(err, new(*toolcall.Error)):
		return errtext.Error(err) + ": " + whoServes(events.SeqPrefix)
	}
	return errtext.Error(err)
}

// looksLikeFile reports whether a SEQUENCE argument is meant as a path
// rather than a stored name.
// readSequenceFile reads a sequence file named on the command line as
// `skillbus validate` does (registry.ReadArg: a regular file, through a
// symlink only inside its directory or the current one, within the size
// limit). A skill file (SKILL.md, skill.yaml) is refused with a message
// saying so. It returns the bytes and -1, or an exit code after printing
// the problem.
func readSequenceFile(env Env, cmd, path string) ([]byte, int) {
	if registry.FileKind(path) == "skill" {
		fmt.Fprintf(env.Stderr, "skillbus %s: %s is a skill, not a sequence: a skill is instructions for a model, listed and injected by skillface, and is not run (`skillbus validate %s` checks it, `skillbus skills info NAME` shows a stored one); give a sequence file (*.seq.yaml, *.seq.json) or a stored sequence's name\n", cmd, path, path)
		return nil, ExitUsage
	}
	data, _, _, err := registry.ReadArg(path, registry.MaxDefinitionBytes(registry.DefaultMaxPayload))
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus %s: %s: %s\n", cmd, path, registry.RefusalMessage(err))
		return nil, ExitFailure
	}
	return data, -1
}

func looksLikeFile(s string) bool {
	return strings.ContainsAny(s, `/\`) || strings.HasSuffix(s, ".json") || strings.HasSuffix(s, ".yaml") || strings.HasSuffix(s, ".yml") || filepath.IsAbs(s)
}

func statErr(err error, st os.FileInfo) string {
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return pe.Err.Error()
		}
		return err.Error()
	}
	if st != nil && st.IsDir() {
		return "it is a directory"
	}
	return "unreadable"
}

// describe turns a request error into text, adding a hint for "404".
func describe(err error, hint404 string) string {
	var se *toolcall.Error
	if errors.As(err, &se) && se.Code == "404" && hint404 != "" && !strings.Contains(se.Description, "skillbus ") {
		return errtext.Text(se.Description) + "; " + hint404
	}
	return errtext.Error(err)
}

// printSeqProblems prints each problem of an invalid sequence on its own
// line, prefixed with the file.
func printSeqProblems(env Env, file string, err error) {
	var errs seq.Errors
	if errors.As(err, &errs) {
		for _, e := range errs {
			fmt.Fprintf(env.Stderr, "%s: %v\n", file, e)
		}
		return
	}
	fmt.Fprintf(env.Stderr, "%s: %v\n", file, err)
}

// validToken reports whether id can be a run id (one subject token of
// letters, digits, '-' and '_').
func validToken(id string) bool {
	if id == "" {
		return false
	}
	for _, r := range id {
		if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// callsTool reports whether a group of s calls the tool named name.
func callsTool(s *seq.Sequence, name string) bool {
	for _, g := range s.Groups {
		for _, c := range g.Tools {
			if c.Tool == name {
				return true
			}
		}
	}
	return false
}

// signalsOf returns the names of the signals s waits for (its wait_for
// groups with a signal, docs/sequences.md "wait_for"), in group order;
// none for a nil s.
func signalsOf(s *seq.Sequence) []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, g := range s.Groups {
		if g.WaitFor != nil && g.WaitFor.Signal != "" && !slices.Contains(out, strconv.Quote(g.WaitFor.Signal)) {
			out = append(out, strconv.Quote(g.WaitFor.Signal))
		}
	}
	return out
}
