// Package streamread reads JetStream streams without consumers: the
// history of a subject filter, the last entry of every key of a bucket, an
// object of an object store, and "follow" (history, then each new message
// as it is stored).
//
// Why no consumers: a consumer's deliver_subject is part of the
// CONSUMER.CREATE request body, which NATS permissions cannot filter, so a
// role that may create consumers on a stream can make the server deliver
// the stream's messages onto any subject (a service's queue subject,
// tool.cmd.run). Only the service that owns a stream (events.OwnerOf) may
// create consumers on it; every other reader uses this package
// (docs/security.md, "Consumers").
//
// How it reads:
//   - EVENTS (and any stream without AllowDirect) by the STREAM.MSG.GET
//     API, one message a request (Next). Its reply wraps the message in
//     JSON, base64 body and all, so even a request whose reply subject
//     names another subject cannot place a stored body there verbatim.
//     EVENTS holds bodies clients write themselves (agent_ready), so it
//     is not opened to direct gets, whose replies are the stored message
//     as it is.
//   - KV buckets and object stores (which have AllowDirect) by batch
//     direct gets (Batch, orbit.go's jetstreamext.GetBatch): up to a
//     batch of messages per request.
//   - Live messages: a core subscription to the filter only wakes the
//     reader, which then reads from its cursor (the stream sequence after
//     the last message it returned), so nothing is missed or doubled;
//     a core message may arrive before the stream stored it, so an empty
//     read after a wake is tried again shortly, and a poll covers
//     messages published while the connection was down.
package streamread

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
)

// Errors of the package.
var (
	// ErrStream is a reply of the server that is not a message: the
	// stream does not exist, the request was refused, a bad request. It
	// wraps the server's words.
	ErrStream = errors.New("streamread: the server did not return the message")
	// ErrObject is an object that cannot be read whole: missing, deleted,
	// a link, a chunk missing, or a size or digest that does not match.
	ErrObject = errors.New("streamread: object")
)

// apiPrefix is the JetStream API prefix of the default domain, the one the
// permission table grants (internal/auth).
const apiPrefix = "$JS.API."

// Msg is one stored message.
type Msg = jetstream.RawStreamMsg

// msgGetReply is the STREAM.MSG.GET reply.
type msgGetReply struct {
	Error *struct {
		Code        int    `json:"code"`
		ErrCode     int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error"`
	Message *struct {
		Subject  string    `json:"subject"`
		Sequence uint64    `json:"seq"`
		Header   []byte    `json:"hdrs"`
		Data     []byte    `json:"data"`
		Time     time.Time `json:"time"`
	} `json:"message"`
}

// errNoMessage is the server's err_code for "no message found".
const errNoMessage = 10037

// Next returns the first message of stream at or after sequence seq whose
// subject matches filter (a subject with wildcards), by one STREAM.MSG.GET
// request; nil, nil when there is none. With seq 0 and start not zero it
// returns the first at or after that time. Errors: ErrStream (with the
// server's description), NATS request errors (a timeout, a refused
// publish: natsconn.RefusedCause tells).
func Next(ctx context.Context, nc *nats.Conn, stream, filter string, seq uint64, start time.Time) (*Msg, error) {
	req := map[string]any{"next_by_subj": filter}
	if seq == 0 && !start.IsZero() {
		req["start_time"] = start.UTC()
	} else {
		req["seq"] = max(seq, 1)
	}
	body, _ := json.Marshal(req)
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	m, err := nc.RequestWithContext(ctx, apiPrefix+"STREAM.MSG.GET."+stream, body)
	if err != nil {
		return nil, err
	}
	var r msgGetReply
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return nil, fmt.Errorf("%w: %s: unreadable reply %.100q: %v", ErrStream, stream, m.Data, err)
	}
	if r.Error != nil {
		if r.Error.ErrCode == errNoMessage {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: %s: %s (%d, %d)", ErrStream, stream, r.Error.Description, r.Error.Code, r.Error.ErrCode)
	}
	if r.Message == nil {
		return nil, fmt.Errorf("%w: %s: a reply without message", ErrStream, stream)
	}
	out := &Msg{Subject: r.Message.Subject, Sequence: r.Message.Sequence, Data: r.Message.Data, Time: r.Message.Time}
	if len(r.Message.Header) > 0 {
		if out.Header, err = nats.DecodeHeadersMsg(r.Message.Header); err != nil {
			return nil, fmt.Errorf("%w: %s: message %d: unreadable headers: %v", ErrStream, stream, out.Sequence, err)
		}
	}
	return out, nil
}

// Batch returns up to n messages of stream from sequence seq on whose
// subject matches filter, oldest first, by one batch direct get (the
// stream must allow direct gets: KV buckets and object stores do); an
// empty slice when there are none. Errors: ErrStream, NATS errors.
func Batch(ctx context.Context, js jetstream.JetStream, stream, filter string, seq uint64, n int) ([]*Msg, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	it, err := jetstreamext.GetBatch(ctx, js, stream, n, jetstreamext.GetBatchSeq(max(seq, 1)), jetstreamext.GetBatchSubject(filter))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrStream, stream, err)
	}
	var out []*Msg
	for m, err := range it {
		if errors.Is(err, jetstreamext.ErrNoMessages) {
			break
		}
		if err != nil {
			return out, fmt.Errorf("%w: %s: batch from %d: %v", ErrStream, stream, seq, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// LastSeq returns the sequence of the last message stored in stream (0
// when it is empty), from its STREAM.INFO.
func LastSeq(ctx context.Context, js jetstream.JetStream, stream string) (uint64, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return 0, err
	}
	return s.CachedInfo().State.LastSeq, nil
}

// ReadObject returns the bytes of the object name of the object store
// bucket: its metadata by a direct get, its chunks by batch direct gets,
// checked against the size and SHA-256 digest of the metadata. Errors:
// ErrObject (not found, deleted, a link, a chunk missing, a size or digest
// that differs), jetstream's errors for the bucket, NATS errors.
func ReadObject(ctx context.Context, js jetstream.JetStream, bucket, name string) ([]byte, error) {
	obs, err := js.ObjectStore(ctx, bucket)
	if err != nil {
		return nil, err
	}
	info, err := obs.GetInfo(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("%w %s/%s: %v", ErrObject, bucket, name, err)
	}
	if info.Opts != nil && info.Opts.Link != nil {
		return nil, fmt.Errorf("%w %s/%s: a link, not read", ErrObject, bucket, name)
	}
	stream, subj := "OBJ_"+bucket, "$O."+bucket+".C."+info.NUID
	out := make([]byte, 0, info.Size)
	var seq uint64
	for got := uint32(0); got < info.Chunks; {
		msgs, err := Batch(ctx, js, stream, subj, seq, int(min(info.Chunks-got, 256)))
		if err != nil {
			return nil, err
		}
		if len(msgs) == 0 {
			return nil, fmt.Errorf("%w %s/%s: chunk %d of %d is missing", ErrObject, bucket, name, got+1, info.Chunks)
		}
		for _, m := range msgs {
			out = append(out, m.Data...)
			seq = m.Sequence + 1
			got++
		}
	}
	if uint64(len(out)) != info.Size {
		return nil, fmt.Errorf("%w %s/%s: %d bytes read; the metadata says %d", ErrObject, bucket, name, len(out), info.Size)
	}
	sum := sha256.Sum256(out)
	if want, ok := strings.CutPrefix(info.Digest, "SHA-256="); ok {
		if d, err := base64.URLEncoding.DecodeString(want); err != nil || string(d) != string(sum[:]) {
			return nil, fmt.Errorf("%w %s/%s: the SHA-256 digest of the bytes read differs from the metadata's", ErrObject, bucket, name)
		}
	} else if info.Size > 0 {
		return nil, fmt.Errorf("%w %s/%s: no SHA-256 digest in the metadata (%q)", ErrObject, bucket, name, info.Digest)
	}
	return out, nil
}
