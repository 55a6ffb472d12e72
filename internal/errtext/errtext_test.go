package errtext

import (
	"errors"
	"fmt"
	"testing"
)

var (
	errConflict = errors.New("client: conflict")
	errToken    = errors.New("events: invalid subject token")
	errConfig   = errors.New("registry: invalid configuration")
	errOptions  = errors.New("events: invalid provisioning option")
	errWorker   = errors.New("seqworker: invalid configuration")
)

func TestError(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: %w", errConflict, errors.New("queue the run: seqworker: run id already used: run id \"x\" was used for hello")),
			"queue the run: run id already used: run id \"x\" was used for hello"},
		{fmt.Errorf("%w: run id %q contains ' '", errToken, "dup 1"), `run id "dup 1" contains ' '`},
		{fmt.Errorf("%w: Dir %q: no such directory", errConfig, "/nonexistent"), `Dir "/nonexistent": no such directory`},
		{fmt.Errorf("%w: Provision: %w", errWorker, fmt.Errorf("%w: AckWait = -5s; want at least 1s", errOptions)), "Provision: AckWait = -5s; want at least 1s"},
		{errConflict, "conflict"},
		{errors.New("cancelled: cancelled: x"), "cancelled: x"},
		{errors.New("stop; seqworker: busy"), "stop; busy"},
		{errors.New(`group 1 "g": tool 2 "fs.read": path: want a string`), `group 1 "g": tool 2 "fs.read": path: want a string`},
		{errors.New("nats: no responders available for request"), "nats: no responders available for request"},
	}
	for _, tc := range cases {
		if got := Error(tc.err); got != tc.want {
			t.Errorf("Error(%q)\n got %q\nwant %q", tc.err, got, tc.want)
		}
	}
	if Error(nil) != "" {
		t.Error("Error(nil) is not empty")
	}
}
