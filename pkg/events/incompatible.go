package events

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// JetStream API error codes (nats-server's errors.json) that no retry can
// get past: the server refuses the configuration itself, not for now.
const (
	// codeStreamInvalidConfig: "stream configuration update can not
	// change …" (storage type, retention to or from work queue, …).
	codeStreamInvalidConfig = 10052
	// codeSubjectOverlap: "subjects overlap with an existing stream".
	codeSubjectOverlap = 10065
	// codeReplicasNotSupported: "replicas > 1 not supported in
	// non-clustered mode".
	codeReplicasNotSupported = 10074
)

// Incompatibility says which setting an IncompatibleError is about.
type Incompatibility string

// The settings an existing resource or the server may refuse to take.
const (
	// IncompatibleReplicas: more than one replica on a server that is not
	// in a JetStream cluster.
	IncompatibleReplicas Incompatibility = "replicas"
	// IncompatibleStorage: the resource exists with the other storage
	// type (file or memory); the server cannot change it.
	IncompatibleStorage Incompatibility = "storage"
	// IncompatibleSubjects: another stream holds the resource's subjects.
	IncompatibleSubjects Incompatibility = "subjects"
	// IncompatibleConfig: another setting the server cannot change on an
	// existing stream (its retention, for one).
	IncompatibleConfig Incompatibility = "config"
	// IncompatibleSize: the server's JetStream store (max_file_store or
	// max_memory_store, or the account's limit) has no room for the
	// resource's byte limit, which the server reserves when it makes the
	// resource (docs/runs.md, "Retention and sizing").
	IncompatibleSize Incompatibility = "size"
)

// Codes of a server's refusals for want of room: "insufficient storage
// resources available", "insufficient memory resources available". (A
// cluster that finds no peers with room says "insufficient resources",
// 10023, as it does while too few servers are up: that one is retried.)
const (
	codeStorageExceeded = 10047
	codeMemoryExceeded  = 10028
)

// IncompatibleError is Provision's error when the server refuses a
// stream's or bucket's configuration for good (ErrIncompatible). Its
// fields let a command say how to fix it in its own terms (its flags):
// internal/servicecmd does, docs/operations.md ("Provisioning errors")
// lists the cases.
type IncompatibleError struct {
	// Resource names what was provisioned: "bucket SKILLS", "stream
	// EVENTS", "object store RUN_SLOTS", "consumer seqworker on SEQ_RUNS".
	Resource string
	// Stream is the JetStream stream behind it (KV_SKILLS, EVENTS,
	// OBJ_RUN_SLOTS, SEQ_RUNS), the name the nats CLI takes.
	Stream string
	// Setting is the setting at stake.
	Setting Incompatibility
	// Reason says what is wrong, in words: "it was created with file
	// storage and the server cannot change a stream's storage to memory".
	Reason string
	// Holder is, for IncompatibleSubjects, the stream that holds the
	// subjects ("" when the server did not say).
	Holder string
	// Replicas is the number of replicas asked for.
	Replicas int
	// Err is the server's error (a *jetstream.APIError).
	Err error
}

func (e *IncompatibleError) Error() string {
	return fmt.Sprintf("%v: %s: %s (%v)", ErrProvision, e.Resource, e.Reason, e.Err)
}

// Is reports ErrProvision and ErrIncompatible.
func (e *IncompatibleError) Is(target error) bool {
	return target == ErrProvision || target == ErrIncompatible
}

func (e *IncompatibleError) Unwrap() error { return e.Err }

// provisionErr wraps the server's error err for resource (its stream
// stream, with subjects): an *IncompatibleError when retrying cannot help,
// else ErrProvision naming the resource.
func provisionErr(ctx context.Context, js StreamManager, resource, stream string, subjects []string, o Options, err error) error {
	var ae *jetstream.APIError
	if !errors.As(err, &ae) {
		return fmt.Errorf("%w: %s: %w", ErrProvision, resource, err)
	}
	ie := &IncompatibleError{Resource: resource, Stream: stream, Replicas: o.Replicas, Err: err}
	switch {
	case ae.ErrorCode == codeReplicasNotSupported:
		ie.Setting = IncompatibleReplicas
		ie.Reason = fmt.Sprintf("%d replicas need a JetStream cluster, and this NATS server is not in one", o.Replicas)
	case ae.ErrorCode == codeSubjectOverlap:
		ie.Setting = IncompatibleSubjects
		ie.Holder = holderOf(ctx, js, stream, subjects)
		who := "another stream"
		if ie.Holder != "" {
			who = "the stream " + ie.Holder
		}
		ie.Reason = fmt.Sprintf("%s already takes (some of) its subjects %s, and the server gives a subject to one stream only", who, strings.Join(subjects, ", "))
	case ae.ErrorCode == codeStreamInvalidConfig && strings.Contains(ae.Description, "storage"):
		ie.Setting = IncompatibleStorage
		want := "file"
		if o.Storage == jetstream.MemoryStorage {
			want = "memory"
		}
		ie.Reason = fmt.Sprintf("it exists with another storage type, and the server cannot change a stream's storage to %s", want)
		if has := storageOf(ctx, js, stream); has != "" {
			ie.Reason = fmt.Sprintf("it was created with %s storage, and the server cannot change a stream's storage to %s", has, want)
		}
	case ae.ErrorCode == codeStorageExceeded || ae.ErrorCode == codeMemoryExceeded:
		ie.Setting = IncompatibleSize
		ie.Reason = "the server's JetStream store has no room left for its byte limit, which the server reserves when it makes it " +
			"(skillbus's defaults add up to 704 MiB: RUNS and RUN_SLOTS 256 MiB, EVENTS 128 MiB, SEQ_RUNS 64 MiB)"
	case ae.ErrorCode == codeStreamInvalidConfig:
		ie.Setting = IncompatibleConfig
		ie.Reason = "it exists with settings the server cannot change to skillbus's: " + strings.TrimPrefix(ae.Description, "stream configuration update ")
	default:
		return fmt.Errorf("%w: %s: %w", ErrProvision, resource, err)
	}
	return ie
}

// holderOf returns the stream, other than stream, that holds one of
// subjects, or "" when js cannot say.
func holderOf(ctx context.Context, js StreamManager, stream string, subjects []string) string {
	lister, ok := js.(interface {
		StreamNames(ctx context.Context, opts ...jetstream.StreamListOpt) jetstream.StreamNameLister
	})
	if !ok {
		return ""
	}
	holder := ""
	for _, subj := range subjects {
		// Read to the end: the lister's goroutine sends every name.
		for n := range lister.StreamNames(ctx, jetstream.WithStreamListSubject(subj)).Name() {
			if n != stream && holder == "" {
				holder = n
			}
		}
	}
	return holder
}

// storageOf returns the storage type ("file" or "memory") of an existing
// stream, or "" when js cannot read it.
func storageOf(ctx context.Context, js StreamManager, stream string) string {
	rr, ok := js.(ResourceReader)
	if !ok {
		return ""
	}
	s, err := rr.Stream(ctx, stream)
	if err != nil {
		return ""
	}
	return strings.ToLower(s.CachedInfo().Config.Storage.String())
}
