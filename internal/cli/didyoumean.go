package cli

import (
	"context"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go"
	"github.com/skillbus/skillbus/internal/registry"
	"github.com/skillbus/skillbus/internal/suggest"
	"github.com/skillbus/skillbus/pkg/client"
)

// Hints for a stored name that is not found (`run grete`, `call
// greet-rendr`, `skills info jetstrem-incident`): how to list the names,
// after the closest stored one when one is near.
const (
	listSeqsHint   = "list the stored sequences with `skillbus seqs`"
	listSkillsHint = "list the skills with `skillbus skills`"
	listGroupsHint = "list the sequences and their groups with `skillbus seqs`"
)

// withDidYouMean prefixes hint with the closest of names to name, if any:
// `did you mean "greet"? (list the stored sequences with ...)`.
func withDidYouMean(name string, names []string, hint string) string {
	if sg := suggest.Closest(name, names); sg != "" && sg != name {
		return fmt.Sprintf("did you mean %q? (%s)", sg, hint)
	}
	return hint
}

// seqNames lists the stored sequences' names and, with groups, their
// groups' names. An error of the registry gives nil: a hint is then only
// the listing hint.
func seqNames(list *registry.SeqList, groups bool) []string {
	if list == nil {
		return nil
	}
	var out []string
	for _, s := range list.Sequences {
		if groups {
			out = append(out, s.Groups...)
		} else {
			out = append(out, s.Name)
		}
	}
	return out
}

// storedSeqHint is clientSeqHint over a bare connection.
func storedSeqHint(ctx context.Context, nc *nats.Conn, name string) string {
	c, err := client.New(nc, client.WithTimeout(requestTimeout))
	if err != nil {
		return listSeqsHint
	}
	return clientSeqHint(ctx, c, name)
}

// clientSeqHint is storedSeqHint through a client.
func clientSeqHint(ctx context.Context, c *client.Client, name string) string {
	l, err := c.SeqList(ctx)
	if err != nil {
		return listSeqsHint
	}
	return withDidYouMean(name, seqNames(l, false), listSeqsHint)
}

// seqStored reports whether a sequence named name is stored and, when it
// is not, the did-you-mean hint for it (`runs --sequence grete`). A
// registry that does not answer counts as stored: the caller then shows
// what it has rather than a guess.
func seqStored(ctx context.Context, c *client.Client, name string) (hint string, stored bool) {
	l, err := c.SeqList(ctx)
	if err != nil {
		return "", true
	}
	names := seqNames(l, false)
	if slices.Contains(names, name) {
		return "", true
	}
	return withDidYouMean(name, names, listSeqsHint), false
}

// clientSkillHint is the not-found hint for skill name.
func clientSkillHint(ctx context.Context, c *client.Client, name string) string {
	l, err := c.SkillList(ctx)
	if err != nil {
		return listSkillsHint
	}
	names := make([]string, len(l.Skills))
	for i, s := range l.Skills {
		names[i] = s.Name
	}
	return withDidYouMean(name, names, listSkillsHint)
}
