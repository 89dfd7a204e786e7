package election

import (
	"context"
	"strings"

	"dlm/redlock"
)

// ReadStatus reads the election name over client as Election.Status does
// ((leader, term, since)), for tools that show elections beside locks,
// such as dlm status: unlike New, it accepts a client built without
// redlock.WithFencing (it only reads), as long as the fence key prefix
// (redlock.WithFencePrefix) and record key prefix are those of the
// candidates' clients. It refuses a bad name with an error wrapping
// ErrInvalid, and returns the errors of Status.
func ReadStatus(ctx context.Context, client *redlock.Client, name string) (Status, error) {
	if client == nil {
		return Status{}, invalidf("nil lock client")
	}
	if err := checkText("election name", name); err != nil {
		return Status{}, err
	}
	e := &Election{client: client, name: name, resource: ResourcePrefix + name, opts: options{poll: DefaultPollInterval}}
	return e.Status(ctx)
}

// NameOf returns the name of the election whose lock resource is resource
// ("election:db" gives "db"), and false for the resource of anything else:
// for a tool that lists the held locks and shows elections apart.
func NameOf(resource string) (string, bool) {
	name, ok := strings.CutPrefix(resource, ResourcePrefix)
	return name, ok && checkText("election name", name) == nil
}
