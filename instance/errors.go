package instance

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors; the CLI maps them to exit codes with errors.Is.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
	ErrInvalid  = errors.New("invalid")
	// ErrDeleted marks a [NotFoundError] for an instance that existed and was
	// deleted under its caller, typically an endpoint still serving it.
	ErrDeleted = errors.New("deleted")
	// ErrUnavailable marks an error of a store that could not be reached
	// (a PostgreSQL server down or out of reach): trying again later may
	// work, and nothing was changed. Packages that do not import this one
	// find it by its method StoreUnavailable.
	ErrUnavailable error = unavailableError{}
)

type unavailableError struct{}

func (unavailableError) Error() string          { return "store unavailable" }
func (unavailableError) StoreUnavailable() bool { return true }

// NotFoundError says which instance or question was not found.
type NotFoundError struct {
	What string // "instance", "question"
	Ref  string
	Hint string
	// Deleted is set when the instance existed and was deleted while its
	// caller worked on it; the error then also matches [ErrDeleted].
	Deleted bool
}

func (e *NotFoundError) Error() string {
	s := fmt.Sprintf("%s %q not found", e.What, e.Ref)
	if e.Deleted {
		s = fmt.Sprintf("%s %q was deleted", e.What, e.Ref)
	}
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

func (e *NotFoundError) Unwrap() []error {
	if e.Deleted {
		return []error{ErrNotFound, ErrDeleted}
	}
	return []error{ErrNotFound}
}

// InstanceDeleted reports whether the error is an instance deleted under its
// caller. The endpoint recognises a deletion by this method (see
// [github.com/agentctl/agentctl/mcpserver.IsInstanceDeleted]) without
// importing this package.
func (e *NotFoundError) InstanceDeleted() bool { return e.Deleted && e.What == "instance" }

// deletedError is the error for instance id, deleted while in use.
func deletedError(id string) error {
	return &NotFoundError{What: "instance", Ref: id, Deleted: true, Hint: "it no longer exists, so nothing more can be recorded for it"}
}

// ServedError is a delete refused because an endpoint is serving the instance.
type ServedError struct{ ID string }

func (e *ServedError) Error() string {
	return fmt.Sprintf("instance %s is in use: an endpoint is serving it (agentctl mcp serve, or a session of agentctl serve); "+
		"stop the client that uses it first, or pass --force to delete it anyway", e.ID)
}

func (e *ServedError) Unwrap() error { return ErrConflict }

// AmbiguousError is a reference that matches several instances or questions.
type AmbiguousError struct {
	What    string
	Ref     string
	Matches []string
	// More: there are more matches than Matches lists.
	More bool
	// Has says what Matches are (default "it matches"); Hint, what to do
	// (default: give more characters of the id).
	Has, Hint string
}

func (e *AmbiguousError) Error() string {
	has, hint := cmp.Or(e.Has, "it matches"), cmp.Or(e.Hint, "give more characters of the id")
	matches := strings.Join(e.Matches, ", ")
	if e.More {
		matches += " and more"
	}
	return fmt.Sprintf("%s %q is ambiguous: %s %s; %s", e.What, e.Ref, has, matches, hint)
}

func (e *AmbiguousError) Unwrap() error { return ErrConflict }

// InvalidError is bad input: what was wrong and how to fix it.
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string { return e.Msg }
func (e *InvalidError) Unwrap() error { return ErrInvalid }

func invalidf(format string, args ...any) error {
	return &InvalidError{Msg: fmt.Sprintf(format, args...)}
}

// CorruptRecordError is an instance record in the state database that does
// not decode. [Store.Get] returns it; [Store.List] reports it beside the
// good records; [Store.DeleteInstance] still deletes the instance.
type CorruptRecordError struct {
	ID  string
	Err error // the decoding error
}

func (e *CorruptRecordError) Error() string {
	return fmt.Sprintf("instance %s: its record in the state database is corrupt (%v); `agentctl instance delete %s` removes it and its directory", e.ID, e.Err, e.ID)
}

func (e *CorruptRecordError) Unwrap() error { return e.Err }
