package config

import (
	"errors"
	"fmt"
)

// ErrInvalid is wrapped by every *FileError.
var ErrInvalid = errors.New("invalid configuration")

// FileError is a configuration file that cannot be used: unreadable,
// malformed JSONC, a value of the wrong type, a bad substitution. Line and
// Col are 1-based; zero when the error has no position (an unreadable file).
type FileError struct {
	Path      string
	Line, Col int
	Msg       string
}

func (e *FileError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.Path, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.Path, e.Line, e.Col, e.Msg)
}

func (e *FileError) Unwrap() error { return ErrInvalid }
