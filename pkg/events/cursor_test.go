package events

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCheckListCursor(t *testing.T) {
	good := ListCursor(time.Date(2026, 11, 30, 20, 1, 2, 3, time.FixedZone("x", 3600)), "run-abc")
	for _, s := range []string{"", good} {
		if err := CheckListCursor(s); err != nil {
			t.Errorf("CheckListCursor(%q) = %v; want nil", s, err)
		}
	}
	for _, s := range []string{"garbage", "2026-11-30|run-1", "2026-11-30T20:01:02.000000003Z|", "2026-11-30T20:01:02.000000003Z|run 1", "x|run-1"} {
		if err := CheckListCursor(s); !errors.Is(err, ErrBadMessage) || !strings.Contains(err.Error(), `("<created time>|<run id>")`) {
			t.Errorf("CheckListCursor(%q) = %v; want ErrBadMessage stating the cursor's form", s, err)
		}
	}
}

// FuzzCheckListCursor: no input panics, and every cursor ListCursor makes
// of a valid run id is accepted.
func FuzzCheckListCursor(f *testing.F) {
	f.Add("garbage", int64(0), "run-1")
	f.Add("2026-11-30T20:01:02.000000003Z|run-1", int64(1764532862), "r")
	f.Fuzz(func(t *testing.T, s string, sec int64, id string) {
		_ = CheckListCursor(s)
		if CheckRunID(id) != nil || sec < 0 || sec > 1<<35 {
			return
		}
		if c := ListCursor(time.Unix(sec, 0), id); CheckListCursor(c) != nil {
			t.Fatalf("ListCursor(%d, %q) = %q is refused: %v", sec, id, c, CheckListCursor(c))
		}
	})
}
