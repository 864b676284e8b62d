package instance

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors; the CLI maps them to exit codes with errors.Is.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
	ErrInvalid  = errors.New("invalid")
)

// NotFoundError says which instance or question was not found.
type NotFoundError struct {
	What string // "instance", "question"
	Ref  string
	Hint string
}

func (e *NotFoundError) Error() string {
	s := fmt.Sprintf("%s %q not found", e.What, e.Ref)
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

func (e *NotFoundError) Unwrap() error { return ErrNotFound }

// AmbiguousError is a reference that matches several instances or questions.
type AmbiguousError struct {
	What    string
	Ref     string
	Matches []string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("%s %q is ambiguous: it matches %s; give more characters of the id",
		e.What, e.Ref, strings.Join(e.Matches, ", "))
}

func (e *AmbiguousError) Unwrap() error { return ErrConflict }

// InvalidError is bad input: what was wrong and how to fix it.
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string { return e.Msg }
func (e *InvalidError) Unwrap() error { return ErrInvalid }

func invalidf(format string, args ...any) error {
	return &InvalidError{Msg: fmt.Sprintf(format, args...)}
}
