package events

import (
	"fmt"
	"strings"
	"time"
)

// ListCursorLayout is the time layout of a list page cursor
// (SeqListReply.Next, SeqListRequest.Before): "<created>|<run id>", the
// created time in UTC with nanoseconds at a fixed width so that cursors
// compare as times.
const ListCursorLayout = "2006-01-02T15:04:05.000000000Z"

// ListCursor returns the page cursor of a run created at created.
func ListCursor(created time.Time, runID string) string {
	return created.UTC().Format(ListCursorLayout) + "|" + runID
}

// CheckListCursor reports whether s is a page cursor as ListCursor writes
// it (SeqListReply.Next): "" is the first page. Errors: ErrBadMessage
// saying which part is wrong and the form a cursor has
// ("<created time>|<run id>"), and that listings print it.
func CheckListCursor(s string) error {
	if s == "" {
		return nil
	}
	at, id, ok := strings.Cut(s, "|")
	var what string
	switch {
	case !ok:
		what = "has no '|'"
	case len(at) != len(ListCursorLayout):
		what = fmt.Sprintf("%q is not a time like %s", clipToken(at), ListCursorLayout)
	case CheckRunID(id) != nil:
		what = fmt.Sprintf("%q after '|' is not a run id (letters, digits, '-' and '_', at most %d bytes)", clipToken(id), MaxRunIDLength)
	default:
		if _, err := time.Parse(ListCursorLayout, at); err != nil {
			what = fmt.Sprintf("%q is not a time like %s", clipToken(at), ListCursorLayout)
		}
	}
	if what == "" {
		return nil
	}
	return fmt.Errorf("%w: page cursor %q: %s; use the cursor a listing printed for its next page (\"<created time>|<run id>\")", ErrBadMessage, clipToken(s), what)
}
