package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/errtext"
	"github.com/skillbus/skillbus/internal/natsconn"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

// apiError is the body of every error answer of the API: the message the
// command line prints for the same failure, the service's code when a
// service answered with one ("404", "409", …), and for a form the
// problems by field.
type apiError struct {
	Error  string            `json:"error"`
	Code   string            `json:"code,omitempty"`
	Fields map[string]string `json:"fields,omitempty"`
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		writeErr(w, http.StatusInternalServerError, "", "encode the answer: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// writeErr answers an error message with status and a service code.
func writeErr(w http.ResponseWriter, status int, code, msg string) {
	if code == "" {
		code = strconv.Itoa(status) // every error has a code (docs/console.md)
	}
	writeJSON(w, status, apiError{Error: msg, Code: code})
}

// writeFail answers err, a failure of a service request made for r, with
// the HTTP status that matches the service's code: 400, 404, 409, 503 as
// they are, a timeout or no responders 503/504, anything else 502 (the
// console is a gateway to NATS). When the NATS server refused the request
// (r's context ended by a refusal, perms.go) the answer is 403 with the
// refusal: the subject and the credentials. The message is err's own
// text, as the CLI prints it. When the console's NATS connection went down
// while r waited (natsstate.go) the answer is 503 saying so.
func writeFail(w http.ResponseWriter, r *http.Request, err error) {
	var down *natsDownError
	if err != nil && errors.As(context.Cause(r.Context()), &down) {
		writeErr(w, http.StatusServiceUnavailable, "503", down.msg)
		return
	}
	err = natsconn.RefusedCause(r.Context(), err)
	status, code := failStatus(err)
	writeErr(w, status, code, errtext.Error(err))
}

func failStatus(err error) (int, string) {
	var te *toolcall.Error
	code := ""
	if errors.As(err, &te) {
		code = te.Code
	}
	var pe *natsconn.PermissionError
	switch {
	case errors.As(err, &pe):
		return http.StatusForbidden, "403"
	case code == "400" || errors.Is(err, client.ErrBadRequest) || errors.Is(err, client.ErrInvalid):
		return http.StatusBadRequest, code
	case code == "403":
		return http.StatusForbidden, code
	case code == "404" || errors.Is(err, client.ErrNotFound):
		return http.StatusNotFound, code
	case code == "409" || errors.Is(err, client.ErrConflict):
		return http.StatusConflict, code
	case code == "413":
		return http.StatusRequestEntityTooLarge, code
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout), code == "504":
		return http.StatusGatewayTimeout, code
	case code == "503" || errors.Is(err, client.ErrUnavailable), errors.Is(err, nats.ErrNoResponders), errors.Is(err, toolcall.ErrMissing):
		return http.StatusServiceUnavailable, code
	case code != "" && code[0] == '4':
		return http.StatusBadRequest, code
	}
	return http.StatusBadGateway, code
}

// maxBody bounds a request body (a tool call's arguments, a preview's
// conversation): 1 MiB, the NATS default max_payload.
const maxBody = 1 << 20

// readJSON decodes r's body into v, refusing unknown fields and trailing
// data. It answers the error itself and returns false when the body is
// not usable.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeErr(w, http.StatusRequestEntityTooLarge, "", "the request body is larger than 1 MiB")
		return false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeErr(w, http.StatusBadRequest, "", "the request body is not what this endpoint takes: "+bodyProblem(err))
		return false
	}
	if dec.More() {
		writeErr(w, http.StatusBadRequest, "", "the request body has data after its JSON object")
		return false
	}
	return true
}

// bodyProblem says what is wrong with a request body in the terms of its
// JSON, not of the Go types it is decoded into.
func bodyProblem(err error) string {
	var ute *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &ute):
		field := ute.Field
		if field == "" {
			field = "the body"
		}
		return fmt.Sprintf("%s: got a JSON %s, want %s", field, ute.Value, jsonKindOf(ute.Type.Kind().String()))
	case errors.As(err, &se):
		return fmt.Sprintf("not valid JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// jsonKindOf names a Go kind as the JSON value it is decoded from.
func jsonKindOf(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "map", "struct":
		return "an object"
	case "slice", "array":
		return "an array"
	case "int", "int64", "int32", "uint", "uint64", "float64":
		return "a number"
	}
	return "another type"
}
